//! A proxy in front of moto that fails chosen entries of SendMessageBatch
//! and PutEvents the way SQS and EventBridge do: the entry is left out of
//! the call moto sees (so it is never stored) and answered as failed with
//! the chosen code, beside moto's answer for the others. Every other call
//! passes through unchanged. Listens on 127.0.0.1 and talks to moto there.
//!
//! An entry is chosen by a marker: a string its message body (SQS) or
//! `Detail` (EventBridge) contains, such as a delivery id.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A failure to answer for an entry.
#[derive(Debug, Clone)]
struct Fault {
    marker: String,
    code: String,
    sender_fault: bool,
    /// How many more times (`usize::MAX`: always).
    left: usize,
}

#[derive(Debug, Default)]
struct Shared {
    upstream: String,
    /// Down: every SendMessageBatch and PutEvents is answered 503.
    down: std::sync::atomic::AtomicBool,
    /// SendMessageBatch and PutEvents calls seen (each SDK attempt).
    calls: std::sync::atomic::AtomicUsize,
    faults: Mutex<VecDeque<Fault>>,
    /// Entries failed so far, by code.
    failed: Mutex<Vec<String>>,
}

/// The proxy; stops when the test's runtime ends.
#[derive(Debug, Clone)]
pub struct FaultProxy {
    endpoint: String,
    shared: Arc<Shared>,
}

impl FaultProxy {
    /// A proxy on a free port of 127.0.0.1 in front of `upstream` (moto).
    ///
    /// # Panics
    /// When no port can be bound.
    pub async fn start(upstream: &str) -> FaultProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0 for the fault proxy");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            ..Shared::default()
        });
        let state = shared.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let shared = state.clone();
                async move { proxy(&shared, method, uri, headers, body).await }
            },
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FaultProxy {
            endpoint: format!("http://{addr}"),
            shared,
        }
    }

    /// `http://127.0.0.1:PORT`: the endpoint to give the SDK clients.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The next `times` sends of an entry containing `marker` fail with
    /// `code` (`sender_fault`: SQS's flag; EventBridge has none).
    pub fn fail(&self, marker: &str, code: &str, sender_fault: bool, times: usize) {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Fault {
                marker: marker.to_string(),
                code: code.to_string(),
                sender_fault,
                left: times,
            });
    }

    /// Down (`true`): every SendMessageBatch and PutEvents call is answered
    /// 503 ServiceUnavailable, as a whole, until set up again.
    pub fn set_down(&self, down: bool) {
        self.shared
            .down
            .store(down, std::sync::atomic::Ordering::SeqCst);
    }

    /// SendMessageBatch and PutEvents calls that reached the proxy (each of
    /// an SDK's attempts counts).
    pub fn calls(&self) -> usize {
        self.shared.calls.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The codes of the entries failed so far, in order.
    pub fn failed(&self) -> Vec<String> {
        self.shared
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// The fault for an entry whose text is `text`, if one is due (counted).
fn fault_for(shared: &Shared, text: &str) -> Option<Fault> {
    let mut faults = shared.faults.lock().unwrap_or_else(|p| p.into_inner());
    let fault = faults
        .iter_mut()
        .find(|f| f.left > 0 && text.contains(&f.marker))?;
    if fault.left != usize::MAX {
        fault.left -= 1;
    }
    let fault = fault.clone();
    shared
        .failed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(fault.code.clone());
    Some(fault)
}

async fn proxy(
    shared: &Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let (text_field, sqs) = match target.as_str() {
        "AmazonSQS.SendMessageBatch" => ("MessageBody", true),
        "AWSEvents.PutEvents" => ("Detail", false),
        _ => return forward(shared, method, &uri, &headers, body).await,
    };
    shared
        .calls
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if shared.down.load(std::sync::atomic::Ordering::SeqCst) {
        let content_type = if sqs {
            "application/x-amz-json-1.0"
        } else {
            "application/x-amz-json-1.1"
        };
        let error = json!({
            "__type": "ServiceUnavailable",
            "message": "the service is down (the test's proxy)",
        });
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("content-type", content_type)],
            error.to_string(),
        )
            .into_response();
    }
    let Ok(mut request) = serde_json::from_slice::<Value>(&body) else {
        return forward(shared, method, &uri, &headers, body).await;
    };
    let entries: Vec<Value> = request["Entries"].as_array().cloned().unwrap_or_default();
    // (entry, the fault it gets) in the caller's order
    let judged: Vec<(Value, Option<Fault>)> = entries
        .into_iter()
        .map(|e| {
            let text = e[text_field].as_str().unwrap_or_default().to_string();
            (e, fault_for(shared, &text))
        })
        .collect();
    let passed: Vec<Value> = judged
        .iter()
        .filter(|(_, f)| f.is_none())
        .map(|(e, _)| e.clone())
        .collect();
    let mut answer = if passed.is_empty() {
        if sqs {
            json!({"Successful": [], "Failed": []})
        } else {
            json!({"FailedEntryCount": 0, "Entries": []})
        }
    } else {
        request["Entries"] = Value::Array(passed);
        let forwarded = forward(
            shared,
            method,
            &uri,
            &headers,
            Bytes::from(request.to_string()),
        )
        .await;
        if forwarded.status() != StatusCode::OK {
            return forwarded;
        }
        let bytes = axum::body::to_bytes(forwarded.into_body(), 16 << 20)
            .await
            .unwrap_or_default();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(answer) => answer,
            Err(_) => {
                return (StatusCode::BAD_GATEWAY, "moto's answer is not JSON").into_response();
            }
        }
    };
    if sqs {
        let failed = answer["Failed"].as_array_mut().map(std::mem::take);
        let mut failed = failed.unwrap_or_default();
        for (entry, fault) in &judged {
            if let Some(fault) = fault {
                failed.push(json!({
                    "Id": entry["Id"],
                    "SenderFault": fault.sender_fault,
                    "Code": fault.code,
                    "Message": format!("{} (injected by the test's proxy)", fault.code),
                }));
            }
        }
        answer["Failed"] = Value::Array(failed);
    } else {
        let mut results = answer["Entries"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter();
        let mut merged = Vec::with_capacity(judged.len());
        let mut count = answer["FailedEntryCount"].as_u64().unwrap_or(0);
        for (_, fault) in &judged {
            match fault {
                Some(fault) => {
                    count += 1;
                    merged.push(json!({
                        "ErrorCode": fault.code,
                        "ErrorMessage": format!("{} (injected by the test's proxy)", fault.code),
                    }));
                }
                None => merged.push(results.next().unwrap_or(Value::Null)),
            }
        }
        answer["Entries"] = Value::Array(merged);
        answer["FailedEntryCount"] = json!(count);
    }
    let content_type = if sqs {
        "application/x-amz-json-1.0"
    } else {
        "application/x-amz-json-1.1"
    };
    (
        StatusCode::OK,
        [("content-type", content_type)],
        answer.to_string(),
    )
        .into_response()
}

/// The call as it came, to moto, and moto's answer.
async fn forward(
    shared: &Shared,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", shared.upstream);
    let client = reqwest::Client::new();
    let mut request = client.request(method, &url).body(body);
    for (name, value) in headers {
        if !matches!(name.as_str(), "host" | "content-length") {
            request = request.header(name, value);
        }
    }
    match request.send().await {
        Ok(answer) => {
            let status = answer.status();
            let content_type = answer
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            let bytes = answer.bytes().await.unwrap_or_default();
            (status, [("content-type", content_type)], bytes).into_response()
        }
        Err(e) => (StatusCode::BAD_GATEWAY, format!("moto: {e}")).into_response(),
    }
}
