//! The one integration-test binary: black-box tests that run the real `rsmirror` binary
//! against a local HTTP server (127.0.0.1, port 0) serving testdata trees.

mod arc;
mod audit;
mod baseline;
mod bounds_http;
mod bucket;
mod busy;
mod catalog;
mod cli;
mod corpus;
mod corruption;
mod crash;
mod cron;
mod dump;
mod dump_reader;
mod export;
mod feed;
mod filter;
mod fs_faults;
mod fuzz;
mod guard;
mod hostile;
mod hostile_http;
mod https;
mod incremental;
mod inspect;
mod json_shapes;
mod migrate;
mod proxy;
mod read;
mod repair;
mod scp;
mod scp_reader;
mod seaweed;
mod server;
mod support;
