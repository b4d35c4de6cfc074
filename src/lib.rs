//! rsmirror: a ResourceSync Destination.
//!
//! The model in a paragraph: a *source* publishes documents (Source Description, Capability
//! List, Resource List, Change List, dumps, SCP collections, ARC sitemaps). Readers (`rs`, and
//! each format's `read` under `formats`) turn those bytes into typed items without touching
//! the network; the network layer (`net`) fetches documents and resources within a scope,
//! streaming bodies to `staging/` while hashing them; the store (`store`) keeps a SQLite
//! catalog and a content-addressed object store. The engine (`engine`) takes what a format
//! read into the mirror: plan, transfer, verify, decide, commit; `commands` wire a command to
//! it and report. `audit` proves the mirror against the source and its own bytes, and repairs
//! it; `access` reads the mirror back (ls, cat, log, diff, status) from the catalog and objects
//! alone; `export` writes it out for preservation systems. `cli` is what the user typed,
//! `settings` the checked form, `exit` the one exit-code table.

pub mod access;
pub mod audit;
pub mod cli;
pub mod commands;
pub mod engine;
pub mod error;
pub mod exit;
pub mod export;
pub mod formats;
pub mod interrupt;
pub(crate) mod model;
pub mod net;
pub mod progress;
pub mod report;
pub mod rs;
pub mod settings;
pub mod store;
