//! The one-command local stack: everything hookbox runs on AWS, on this
//! machine, with no AWS account and no Docker.
//!
//! - PostgreSQL: a throwaway cluster (removed on stop), or `--database-url`;
//!   migrations applied at start; optionally reached through the local RDS
//!   Data API (`--data-api`), as the functions do on Aurora;
//! - an HTTP server on 127.0.0.1 playing API Gateway: each
//!   `POST /webhooks/{partner}` becomes the REQUEST-authorizer event and the
//!   REST proxy event AWS would send (or, with `--ingress http`, HTTP API's
//!   payload 2.0 authorizer and proxy events), handled by the real
//!   authorizer and ingest handlers;
//! - a queue with SQS semantics (in memory: visibility timeout, receive
//!   count, maxReceiveCount → DLQ; or a real SQS endpoint such as moto)
//!   feeding the real processor handler as the event source mapping would;
//! - the relay + sweeper loop, and `/admin`;
//! - `/api/v1/…`: the HTTP management API (Svix's API), with a bearer token
//!   (`HOOKBOX_API_TOKENS`, or one generated and printed) or an AWS SigV4
//!   signature for `execute-api` with the stack's access key (configured,
//!   or generated and printed), verified as API Gateway's IAM
//!   authorization does.
//!
//! The default configuration has the `demo` partner (a documented contract)
//! and the `demo-downstream` destination, which is the stack's own
//! `/webhooks/demo-downstream`: every outbound `order.status_changed` comes
//! back in through the inbox and is recorded once per `webhook-id`.

pub mod admin;
mod background;
pub mod demo;
pub mod event_source;
pub mod gateway;
pub mod http_api;
mod ingress;
pub mod management;
pub mod options;
mod rest_api;
mod storage;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use base64::Engine as _;
use hookbox::clock::{Clock, SystemClock};
use hookbox::config::{ConfigStore, HookboxConfig};
use hookbox::management::sigv4::{AccessKey, SigV4Keys};
use hookbox::management::{ApiTokens, ManagementApi};
use hookbox::processing::ProcessorConfig;
use hookbox::queue::memory::{MemoryQueue, MemoryQueueConfig};
use hookbox::queue::sqs::SqsQueue;
use hookbox::queue::{Queue, QueueConsumer};
use hookbox::store::Database;
use hookbox::tenants::SecretKeeper;
use hookbox::vault::DataKey;
use hookbox::vault::local::LocalVault;
use hookbox_processor::ProcessorFunction;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use gateway::Ingress;
pub use options::{LOCAL_SIGV4_PRINCIPAL, Options, QueueChoice, check};
pub use storage::redact;

pub use demo::{
    DEMO_PARTNER, DEMO_SECRET, DEMO_TYPES, DOWNSTREAM, DOWNSTREAM_SECRET, FORWARDED_PARTNER,
    demo_config,
};

/// A random token (`hb_` and 64 hex digits).
fn random_token(prefix: &str) -> String {
    format!(
        "{prefix}{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A running stack. Dropping it stops everything (and removes the
/// throwaway database).
pub struct LocalStack {
    url: String,
    ingress: Ingress,

    memory_queue: Option<Arc<MemoryQueue>>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    vault_key: String,
    api_token: Option<String>,
    sigv4_key: AccessKey,
    api_answers: Option<Arc<Mutex<Vec<serde_json::Value>>>>,
    // dropped last: the database outlives the tasks
    storage: storage::Storage,
}

impl std::fmt::Debug for LocalStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStack")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl LocalStack {
    /// Starts everything; returns once the HTTP server accepts requests.
    pub async fn start(options: Options) -> anyhow::Result<LocalStack> {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let storage = storage::open(&options).await?;
        let (db, blobs) = (storage.db.clone(), storage.blobs.clone());

        let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{}", options.port))?;
        let addr = listener.local_addr().context("local address")?;
        let text = match &options.config {
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
            None => demo_config(addr.port()),
        };
        let source = options
            .config
            .as_ref()
            .map_or("built-in demo configuration".to_string(), |p| {
                p.display().to_string()
            });
        let config = Arc::new(ConfigStore::fixed(
            HookboxConfig::parse(&text, &source)?,
            clock.clone(),
        ));
        // publishers evaluate subscriptions against the database's copy (the
        // relay's runs keep it in step too)
        hookbox::outbox::destinations::sync(
            db.as_ref(),
            config.current().await.as_ref(),
            clock.now(),
        )
        .await
        .context("copying the destinations and subscriptions to the database")?;

        let (queue, consumer, memory_queue): (Arc<dyn Queue>, Arc<dyn QueueConsumer>, _) =
            match &options.queue {
                QueueChoice::Memory => {
                    let q = Arc::new(MemoryQueue::new(
                        MemoryQueueConfig {
                            visibility_timeout: options.visibility_timeout,
                            max_receive_count: options.max_receive_count,
                        },
                        clock.clone(),
                    ));
                    (q.clone(), q.clone(), Some(q))
                }
                QueueChoice::Sqs {
                    endpoint,
                    queue_url,
                } => {
                    let q = Arc::new(SqsQueue::new(
                        SqsQueue::local_client(endpoint),
                        queue_url.clone(),
                    ));
                    (q.clone(), q, None)
                }
            };

        let gateway = Arc::new(gateway::Gateway {
            ingress: options.ingress,
            authorizer: hookbox_authorizer::Authorizer::new(config.clone(), clock.clone()),
            ingest: hookbox_ingest::IngestFunction::new(
                // as the template: a partner's routed webhooks are
                // forwarded in the statement that stores them
                hookbox::inbox::ingest::Ingest::new(
                    config.clone(),
                    db.clone(),
                    queue.clone(),
                    blobs.clone(),
                    clock.clone(),
                )
                .with_forwarding_at_ingest(true),
                clock.clone(),
            ),
            clock: clock.clone(),
        });
        // tenants' endpoints: secrets sealed under the local key vault,
        // receivers on this machine (loopback) allowed by the SSRF guard
        let vault = match &options.vault_key {
            Some(key) => {
                LocalVault::from_base64(key).map_err(|e| anyhow::anyhow!("--vault-key: {e}"))?
            }
            None => LocalVault::new(DataKey::random()),
        };
        let vault_key = base64::engine::general_purpose::STANDARD.encode(vault.key().expose());
        let keeper = SecretKeeper::new(Arc::new(vault));
        // the management API: a generated token unless tokens are given
        let (tokens, api_token) = match &options.api_tokens {
            Some(tokens) => (tokens.clone(), None),
            None => {
                let token = random_token("hb_");
                let tokens = ApiTokens::default()
                    .with_token("local", &token)
                    .map_err(|e| anyhow::anyhow!("the generated token: {e}"))?;
                (tokens, Some(token))
            }
        };
        let sigv4_key = options.sigv4_key.clone().unwrap_or_else(|| {
            AccessKey::new(
                format!(
                    "AKLOCAL{}",
                    &uuid::Uuid::new_v4().simple().to_string()[..13]
                )
                .to_ascii_uppercase(),
                random_token(""),
                LOCAL_SIGV4_PRINCIPAL,
            )
        });
        let admin = admin::Admin {
            db: db.clone(),
            queue: queue.clone(),
            clock: clock.clone(),
            history: Arc::new(Mutex::new(VecDeque::new())),
            redrive: memory_queue.clone().map(|q| {
                let redrive: hookbox::management::operator::Redrive =
                    Arc::new(move || q.redrive_dead_letters());
                redrive
            }),
        };
        let management = Arc::new(management::Management {
            api: ManagementApi::new(db.clone(), keeper.clone(), clock.clone(), tokens)
                .with_operator(admin.ports()),
            sigv4: SigV4Keys::default().with(sigv4_key.clone()),
            clock: clock.clone(),
            answers: options.record_api_answers.then(Arc::default),
        });
        let api_answers = management.answers.clone();
        let ingress = options.ingress;
        let app = axum::Router::new()
            .route(
                "/webhooks/{partner}",
                axum::routing::post(gateway::webhook)
                    .get(gateway::webhook)
                    .with_state(gateway)
                    // API Gateway's limit, not axum's default 2 MiB
                    .layer(axum::extract::DefaultBodyLimit::max(
                        gateway::MAX_REQUEST_BYTES,
                    )),
            )
            .route(
                "/api/v1/{*rest}",
                axum::routing::any(management::handle)
                    .with_state(management.clone())
                    .layer(axum::extract::DefaultBodyLimit::max(management::MAX_BODY)),
            )
            // the customer portal: its page and its API (docs/portal.md)
            .route(
                "/portal",
                axum::routing::any(management::handle).with_state(management.clone()),
            )
            .route(
                "/portal/",
                axum::routing::any(management::handle).with_state(management.clone()),
            )
            .route(
                "/portal/{*rest}",
                axum::routing::any(management::handle)
                    .with_state(management.clone())
                    .layer(axum::extract::DefaultBodyLimit::max(management::MAX_BODY)),
            )
            .route("/", axum::routing::get(index))
            // the operator page: its own loopback pages vouched for
            .merge(
                axum::Router::new()
                    .route("/admin", axum::routing::any(management::handle_loopback))
                    .route("/admin/", axum::routing::any(management::handle_loopback))
                    .route(
                        "/admin/{*rest}",
                        axum::routing::any(management::handle_loopback),
                    )
                    .with_state(management.clone())
                    .layer(axum::middleware::from_fn_with_state(
                        addr.port(),
                        admin::same_origin_only,
                    )),
            )
            // a path no route matches: API Gateway's own answer (not the
            // operator page's guard, whose layer would answer it otherwise)
            .fallback(move || async move { ingress.no_route() });

        let (stop, stopped) = watch::channel(false);
        let mut tasks = Vec::new();
        {
            let mut stopped = stopped.clone();
            tasks.push(tokio::spawn(async move {
                let serve = axum::serve(
                    listener,
                    app.into_make_service_with_connect_info::<SocketAddr>(),
                )
                .with_graceful_shutdown(async move {
                    let _ = stopped.wait_for(|s| *s).await;
                });
                if let Err(e) = serve.await {
                    tracing::error!(error = %e, "HTTP server stopped");
                }
            }));
        }

        // the processor, fed as the event source mapping would
        let processor = ProcessorFunction::new(
            db.clone(),
            queue.clone(),
            blobs.clone(),
            clock.clone(),
            Arc::new(demo::LocalProcessor::new(
                config.clone(),
                demo::LocalHandler::new(options.demo_types.clone()),
            )),
            ProcessorConfig {
                max_receive_count: options.max_receive_count,
                retry_schedule: options.retry_schedule.clone(),
                ..ProcessorConfig::default()
            },
        );
        tasks.extend(event_source::spawn(
            options.processor_concurrency,
            consumer,
            Arc::new(processor),
            event_source::Wake::for_queue(memory_queue.as_ref()),
            &stopped,
        ));

        // the relay and sweeper, as the scheduled function runs them
        let relay = background::relay(background::RelayParts {
            db: db.clone(),
            blobs: blobs.clone(),
            queue: queue.clone(),
            clock: clock.clone(),
            config: config.clone(),
            keeper: keeper.clone(),
            blob_dir: &storage.blob_dir,
            options: &options,
        })
        .await?;
        tasks.push(tokio::spawn(background::relay_loop(
            relay,
            clock.clone(),
            stopped.clone(),
        )));
        tasks.push(tokio::spawn(background::sample_loop(
            admin,
            stopped.clone(),
        )));

        Ok(LocalStack {
            url: format!("http://{addr}"),
            ingress: options.ingress,
            memory_queue,
            stop,
            tasks,
            vault_key,
            api_token,
            sigv4_key,
            api_answers,
            storage,
        })
    }

    /// The local key vault's key (base64): what the CLI needs, as
    /// `HOOKBOX_LOCAL_VAULT_KEY`, to reveal or rotate an endpoint's secret,
    /// and a restart on the same database to open what it sealed.
    pub fn vault_key(&self) -> &str {
        &self.vault_key
    }

    /// The management API's generated token (named `local`), when no
    /// tokens were configured: `Authorization: Bearer <it>`.
    pub fn api_token(&self) -> Option<&str> {
        self.api_token.as_deref()
    }

    /// The access key SigV4-signed management requests may use (service
    /// `execute-api`, any region).
    pub fn sigv4_key(&self) -> &AccessKey {
        &self.sigv4_key
    }

    /// Every answer of the management API so far (`{method, path, status,
    /// body}`), when started with `record_api_answers`.
    pub fn api_answers(&self) -> Vec<serde_json::Value> {
        self.api_answers
            .as_ref()
            .map(|a| a.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or_default()
    }

    /// The directory of the blob store (bodies over the inline threshold).
    pub fn blob_dir(&self) -> &std::path::Path {
        &self.storage.blob_dir
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Which API Gateway the stack plays.
    pub fn ingress(&self) -> Ingress {
        self.ingress
    }

    /// The database (give it to `hookbox` and psql).
    pub fn database_url(&self) -> &str {
        &self.storage.database_url
    }

    /// The database the stack uses.
    pub fn db(&self) -> Arc<dyn Database> {
        self.storage.db.clone()
    }

    /// The in-memory queue, when that is the queue.
    pub fn memory_queue(&self) -> Option<&Arc<MemoryQueue>> {
        self.memory_queue.as_ref()
    }

    /// Stops the server and the loops, then the database (if throwaway).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for task in self.tasks.drain(..) {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for LocalStack {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn index() -> axum::response::Html<&'static str> {
    axum::response::Html(
        "<!doctype html><title>hookbox local</title><p>hookbox local stack: \
         <code>POST /webhooks/{partner}</code>, the management API (Svix's) under \
         <code>/api/v1/</code>, operator page at <a href=\"/admin\">/admin</a>.</p>",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_processor_runs_several_loops_unless_told_otherwise() {
        let options = Options::default();
        assert_eq!(
            options.processor_concurrency,
            event_source::DEFAULT_CONCURRENCY
        );
        assert!(check(&options).is_ok());
        let none = Options {
            processor_concurrency: 0,
            ..Options::default()
        };
        assert!(check(&none).is_err());
    }

    #[test]
    fn the_demo_configuration_is_valid() {
        let config = HookboxConfig::parse(&demo_config(3000), "demo").expect("valid");
        assert!(config.partner(DEMO_PARTNER).is_some());
        let downstream = config.destination(DOWNSTREAM).expect("destination");
        assert_eq!(
            downstream.http().expect("an http destination").url.as_str(),
            "http://127.0.0.1:3000/webhooks/demo-downstream"
        );
    }
}
