//! The business handler of the run: the example orders domain for `sw` and
//! `gh`, forwarding by routes for `fw`, a non-idempotent effect per
//! processed event, the AWS fan-out, and the tenants' events.

use hookbox::example::OrdersHandler;
use hookbox::outbox::NewOutboxEvent;
use hookbox::processing::{BusinessHandler, HandlerError, InboxEvent, Outcome, RoutingHandler};
use hookbox::store::{Statement, Transaction};

use crate::{aws, scenario, tenants};

/// The business handler: partners `fw` and `bt` forwarded by their routes
/// (what ingest did not forward itself); for the others, the example orders domain, whose outbox rows go
/// to `erp` for partner `sw` and to the gone destination for `gh`; the
/// processed `sw` events of one order in five ([`aws::fans_out`]) also go
/// to the EventBridge bus and the FIFO queue (aggregate: the order, so the
/// queue's group); those of a tenant's order ([`tenants::tenant_of`])
/// are published to the tenant's endpoints. Each
/// processed event also writes one `torture_effects` row in the same
/// transaction: an effect that is NOT idempotent (as crediting an account
/// would be), so applying an event twice shows in the ledger even where the
/// orders state machine would ignore the second time.
#[derive(Debug)]
pub(crate) struct Router {
    pub(crate) erp: OrdersHandler,
    pub(crate) gone: OrdersHandler,
    /// The `fw` partner's events that ingest left to the processor
    /// (spooled, large, not storable as jsonb, behind an earlier one).
    pub(crate) routing: RoutingHandler,
}

#[async_trait::async_trait]
impl BusinessHandler for Router {
    async fn handle(
        &self,
        event: &InboxEvent<'_>,
        tx: &dyn Transaction,
    ) -> Result<Outcome, HandlerError> {
        if event.row.partner == scenario::FORWARDED || event.row.partner == crate::batched::BATCHED
        {
            return self.routing.handle(event, tx).await;
        }
        let outcome = if event.row.partner == "gh" {
            self.gone.handle(event, tx).await
        } else {
            self.erp.handle(event, tx).await
        }?;
        if outcome == Outcome::Processed {
            tx.execute(&EFFECT, &hookbox::params! { "id" => event.row.id })
                .await
                .map_err(HandlerError::from)?;
            let order = event.row.ordering_key.as_deref();
            if event.row.partner == "sw" {
                tenants::publish(event, tx).await?;
            }
            if event.row.partner == "sw" && aws::fans_out(order) {
                for destination in [aws::BUS, aws::FIFO] {
                    let out = NewOutboxEvent {
                        aggregate_type: "order".into(),
                        aggregate_id: order.unwrap_or_default().into(),
                        event_type: event.event_type().unwrap_or("unknown").into(),
                        destination: destination.into(),
                        payload: serde_json::json!({
                            "event_id": event.row.event_id,
                            "order": order,
                        }),
                    };
                    hookbox::outbox::enqueue(tx, &out, event.now)
                        .await
                        .map_err(HandlerError::from)?;
                }
            }
        }
        Ok(outcome)
    }
}

const EFFECT: Statement = Statement::new(
    "torture.effect",
    "INSERT INTO torture_effects (inbox_id) VALUES (CAST(:id AS uuid))",
);
