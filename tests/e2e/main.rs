//! End-to-end tests: `run.sh` and the real binaries on temporary projects, with the scripted agent
//! standing in for the model.

mod agent_io;
mod bad_input;
mod bad_input_corpus;
mod containment;
mod curation_score;
mod curator;
mod curator_agent;
mod demo;
mod disk_full;
mod executor;
mod guardrails;
mod hand_edits;
mod init;
mod install;
mod lifecycle;
mod mission;
mod planner;
mod presets;
mod recoveries;
mod redaction;
mod reliability;
mod report;
mod resume;
mod sandbox;
mod sandbox_claude;
mod setbacks;
mod symlinks;
mod validator;
mod worker_loop;
mod worktrees;
