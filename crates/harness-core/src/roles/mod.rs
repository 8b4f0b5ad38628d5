//! The roles: what each role does around its agent — the worker's loop, the validator, the
//! planner, the curator — on one skeleton ([`attempt`]) fed by what the role reads ([`inputs`])
//! and the prompt it gets ([`prompt`]).

pub mod attempt;
pub mod curator;
pub mod explain;
pub mod inputs;
pub mod lifecycle;
pub mod planner;
pub mod prompt;
pub mod validator;
pub mod worker;
