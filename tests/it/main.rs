//! taskgate's integration tests: one binary, so the crate links once.
//! Each module proves one part of the product against the fake GitHub.

mod browser;
mod support;

mod actions_job;
mod actions_runs;
mod audit;
mod chaos;
mod classify_cli;
mod commands_e2e;
mod crash;
mod dashboard;
mod dashboard_browser;
mod demo;
mod dependent_branches;
mod distribution;
mod doctor;
mod echoes;
mod executor_faults;
mod failure_loop;
mod fixtures;
mod github_sub_issue_limits;
mod intake;
mod lists_lag;
mod milestones;
mod plan_sync;
mod quarantine;
mod quarantine_actions;
mod readme_defaults;
mod redeliver;
mod replicas;
mod review_commands;
mod rollback;
mod runs;
mod sandbox;
mod serve_flags;
mod setup;
mod ship;
mod ship_faults;
mod ship_queue;
mod ship_rules;
mod test_results;
mod trust_github;
mod trust_web;
mod webhook_proxy;
mod workflows_permission;
