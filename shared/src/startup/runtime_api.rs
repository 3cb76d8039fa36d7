//! The one Runtime API call `lambda_runtime` does not make for us:
//! `POST /2018-06-01/runtime/init/error` when our own init fails (the crate
//! reports init errors only from SnapStart hooks). One request on a fresh
//! connection to 127.0.0.1: plain HTTP/1.1, so no client is built at init.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where Lambda tells the runtime its API is (`host:port`, optionally with
/// `http://` and a base path, as `cargo lambda watch` does).
pub const RUNTIME_API_VAR: &str = "AWS_LAMBDA_RUNTIME_API";

/// Posts `{"errorType": …, "errorMessage": …}` to the init-error endpoint of
/// the Runtime API at `api`; `Ok` when it answered 2xx.
pub async fn report_init_error(api: &str, error_type: &str, message: &str) -> Result<(), String> {
    let (authority, base) = split(api);
    let body = serde_json::json!({ "errorType": error_type, "errorMessage": message }).to_string();
    let request = format!(
        "POST {base}/2018-06-01/runtime/init/error HTTP/1.1\r\n\
         Host: {authority}\r\n\
         Lambda-Runtime-Function-Error-Type: {error_type}\r\n\
         Content-Type: application/json\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        let mut stream = TcpStream::connect(authority)
            .await
            .map_err(|e| format!("connecting to the Runtime API at {authority}: {e}"))?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| format!("sending the init error: {e}"))?;
        let mut head = [0u8; 64];
        let n = stream
            .read(&mut head)
            .await
            .map_err(|e| format!("reading the Runtime API's answer: {e}"))?;
        Ok::<_, String>(String::from_utf8_lossy(&head[..n]).into_owned())
    };
    let head = tokio::time::timeout(Duration::from_secs(2), exchange)
        .await
        .map_err(|_| "the Runtime API did not answer within 2 s".to_string())??;
    // "HTTP/1.1 202 Accepted"
    match head.split_whitespace().nth(1) {
        Some(status) if status.starts_with('2') => Ok(()),
        other => Err(format!(
            "the Runtime API answered {}",
            other.unwrap_or("nothing")
        )),
    }
}

/// `http://127.0.0.1:9001/.rt` → (`127.0.0.1:9001`, `/.rt`).
fn split(api: &str) -> (&str, &str) {
    let rest = api
        .trim()
        .trim_start_matches("http://")
        .trim_end_matches('/');
    match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_address_may_carry_a_scheme_and_a_base_path() {
        assert_eq!(split("127.0.0.1:9001"), ("127.0.0.1:9001", ""));
        assert_eq!(
            split("http://127.0.0.1:9000/.rt/"),
            ("127.0.0.1:9000", "/.rt")
        );
    }

    #[tokio::test]
    async fn an_unreachable_api_is_an_error_not_a_hang() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let e = report_init_error(&format!("127.0.0.1:{port}"), "T", "m")
            .await
            .expect_err("nothing listens");
        assert!(e.contains("connecting"), "{e}");
    }
}
