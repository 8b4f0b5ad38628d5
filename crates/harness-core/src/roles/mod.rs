//! The roles: what each role does around its agent — the worker's loop, the validator, the
//! planner, the curator — and the prompt each one gets.

pub mod curator;
pub mod explain;
pub mod invoke;
pub mod planner;
pub mod prompt;
pub mod session;
pub mod validator;
pub mod worker;
