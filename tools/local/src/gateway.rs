//! The API Gateway in front of the functions, locally: each HTTP request
//! becomes the events the chosen ingress sends ([`Ingress`]), the
//! authorizer decides, ingest answers. REST (the default): the events of
//! `rest_api.rs`; HTTP API: the payload 2.0 events of `http_api.rs`.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;

use crate::ingress::Call;
pub use crate::ingress::{Gateway, Ingress, MAX_REQUEST_BYTES};

/// `POST /webhooks/{partner}`, and `GET` for the providers' handshakes
/// (the template routes both methods to the same authorizer and ingest).
pub async fn webhook(
    State(gateway): State<Arc<Gateway>>,
    method: Method,
    Path(partner): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let call = Call {
        method,
        partner,
        source_ip: peer.ip().to_string(),
        uri,
        headers,
        body,
    };
    match gateway.ingress {
        Ingress::Rest => crate::rest_api::webhook(&gateway, call).await,
        Ingress::Http => crate::http_api::webhook(&gateway, call).await,
    }
}
