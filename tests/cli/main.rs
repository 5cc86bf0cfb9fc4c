//! Integration tests: one test binary (fast to link), one module per area.
//! Every test talks to real `redis-server` processes started by `support`.

#[path = "../support/mod.rs"]
mod support;

mod acquire;
mod causes;
mod completions;
mod config_file;
mod dataset_changes;
mod derived_names;
mod doctor;
mod errors;
mod escaping;
mod exec;
mod faults;
mod fence;
mod fixture;
mod force;
mod force_shape;
mod fuzz;
mod generated;
mod help;
mod holder;
mod hostile;
mod hostile_status;
mod inputs;
mod keeper;
mod keeper_idle;
mod late;
mod list;
mod list_scale;
mod lua;
mod names;
mod once;
mod output_edges;
mod packaging;
mod private_file;
mod progress;
mod queue;
mod readme;
mod recipes;
mod release_extend;
mod restart_guard;
mod rough_inputs;
mod secrets;
mod semaphore;
mod server_errors;
mod server_sources;
mod server_work;
mod shared;
mod snapshots;
mod status;
mod suite;
mod takeover;
mod true_messages;
mod wakeup;
