//! `local-data-api --listen 127.0.0.1:8080`, with `DATABASE_URL` in the
//! environment: serves the RDS Data API over that PostgreSQL until Ctrl-C /
//! SIGTERM. Prints `local-data-api listening on http://ADDR` on stdout once
//! the port is bound; logs go to stderr (`RUST_LOG`, default `info`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use local_data_api::{Config, LocalDataApi};

/// A local AWS RDS Data API over a real PostgreSQL (for tests and local runs).
#[derive(Debug, Parser)]
#[command(name = "local-data-api", version)]
struct Args {
    /// Address to listen on. Loopback by default: the server accepts any
    /// credentials, so only bind elsewhere on a network you trust.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,

    /// PostgreSQL URL; its dbname is the default database.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: String,

    /// Seconds a transaction may stay unused before it is rolled back.
    #[arg(long, default_value_t = 180)]
    transaction_idle_timeout_secs: u64,

    /// PostgreSQL statement_timeout, in seconds.
    #[arg(long, default_value_t = 45)]
    statement_timeout_secs: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = Config {
        transaction_idle_timeout: Duration::from_secs(args.transaction_idle_timeout_secs),
        statement_timeout: Duration::from_secs(args.statement_timeout_secs),
        ..Config::new(args.database_url)
    };
    let api = LocalDataApi::new(config).context("reading the configuration")?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    tracing::info!(database = %api.database_target(), "serving the RDS Data API");
    println!("local-data-api listening on http://{addr}");
    // Whoever started us may be waiting for that line on a pipe.
    std::io::Write::flush(&mut std::io::stdout()).context("writing to stdout")?;
    api.serve(listener, shutdown_signal())
        .await
        .context("serving")?;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}
