//! The local Data API through the real `aws-sdk-rdsdata` client, over a
//! throwaway PostgreSQL: every operation, every error shape the SDK must
//! decode, type mapping both ways, limits and transactions.

mod support;

mod errors;
mod execute;
mod limits;
mod paused;
mod running;
mod transactions;
mod types;
