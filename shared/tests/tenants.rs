//! Tenants and endpoints (migrations 20 and 21, `hookbox::tenants`) through
//! both database adapters: management and its refusals, publishing to one
//! tenant's matching endpoints only, the relay delivering to endpoints
//! signed with their sealed secrets, rotation with a grace period, held
//! deliveries of disabled endpoints and tenants, deletion that says how
//! much it removed, the audit trail; messages, their attempts and recover
//! (migration 22).

mod common;

#[path = "tenants/attempts.rs"]
mod attempts;
#[path = "tenants/catalog.rs"]
mod catalog;
#[path = "tenants/delivery.rs"]
mod delivery;
#[path = "tenants/endpoints_with_claims.rs"]
mod endpoints_with_claims;
#[path = "tenants/isolation.rs"]
mod isolation;
#[path = "tenants/kms.rs"]
mod kms;
#[path = "tenants/manage.rs"]
mod manage;
#[path = "tenants/messages.rs"]
mod messages;
#[path = "tenants/publish.rs"]
mod publish;
