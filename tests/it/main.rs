//! taskgate's integration tests: one binary, so the crate links once.
//! Each module proves one part of the product against the fake GitHub.

mod browser;
mod support;

/// Shipping: the ship gate, the one-story queue, the ship train, rules and rollback.
mod ship {
    mod approvals;
    mod batch_wait;
    mod cross_repo_deps;
    mod faults;
    mod gate;
    mod landed;
    mod merge_queue_methods;
    mod ordinary_prs;
    mod pinned;
    mod priority;
    mod queue;
    mod race;
    mod rollback;
    mod rules;
    mod rules_changed;
    mod stream_bench;
    mod train;
    mod train_default;
    mod train_more;
    mod workflows_permission;
}

/// People's decisions on tasks: review commands, GitHub's reviews, freeze and the audit log.
mod review {
    pub mod audit;
    mod commands;
    mod github_reviews;
    mod help;
}

/// The agents that fix red runs, and the evidence they get.
mod agents {
    mod copilot_pr;
    pub mod end_to_end;
    mod evidence;
    pub mod failure_loop;
    mod fix_rate;
    mod ready;
}

/// Acceptance runs: the local runner and its sandbox, Actions, test results and flaky tests.
mod runs {
    mod actions_job;
    mod actions_merge;
    mod actions_runs;
    mod disk_floor;
    mod local;
    mod quarantine;
    mod quarantine_actions;
    mod sandbox;
    mod test_results;
}

/// Plans: sync, preview, milestones, dependent branches.
mod plan {
    mod big;
    mod config_unsynced;
    mod cross_repo;
    mod dependent_branches;
    mod milestones;
    mod preview;
    pub mod sync;
}

/// GitHub as it behaves: webhooks, echoes, limits, lags, lost answers, redelivery.
mod github {
    mod cluster_pause;
    mod echoes;
    mod executor_faults;
    mod fair_shares;
    mod fixtures;
    mod intake;
    mod limits;
    mod lists_lag;
    mod redeliver;
    mod sub_issue_limits;
    mod webhook_proxy;
}

/// What taskgate trusts: settings, its own items, GitHub's and the web's inputs.
mod trust {
    mod config;
    mod github;
    mod own_items;
    mod web;
}

/// The dashboard.
mod web {
    mod dashboard;
    mod dashboard_browser;
}

/// Running taskgate: the binary, replicas, crashes, setup, doctor, distribution.
mod ops {
    mod batched_decisions;
    mod chaos;
    mod classify_cli;
    mod crash;
    mod demo;
    mod distribution;
    mod doctor;
    mod readme_defaults;
    mod replicas;
    mod serve_flags;
    mod setup;
    pub mod wakeups;
}
