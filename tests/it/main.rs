//! taskgate's integration tests: one binary, so the crate links once.
//! Each module proves one part of the product against the fake GitHub.

mod support;

mod actions_job;
mod actions_runs;
mod chaos;
mod commands_e2e;
mod crash;
mod dashboard;
mod demo;
mod distribution;
mod echoes;
mod executor_faults;
mod failure_loop;
mod fixtures;
mod intake;
mod milestones;
mod plan_sync;
mod redeliver;
mod replicas;
mod review_commands;
mod runs;
mod sandbox;
mod serve_flags;
mod setup;
mod ship;
mod trust_github;
mod trust_web;
mod webhook_proxy;
