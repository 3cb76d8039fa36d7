//! Error shapes as the SDK decodes them: SQL errors with their SQLSTATE,
//! an unreachable or lost PostgreSQL as DatabaseUnavailableException.

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use aws_sdk_rdsdata::types::Field;

use crate::support::{RESOURCE_ARN, SECRET_ARN, only, sdk_client, serve, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_errors_are_database_errors_with_their_sqlstate() {
    let s = start().await;
    s.run("CREATE TABLE t (id bigint PRIMARY KEY, n int CHECK (n > 0))")
        .await;
    s.run("INSERT INTO t VALUES (1, 1)").await;
    for (sql, state, fragment) in [
        (
            "INSERT INTO t VALUES (1, 1)",
            "23505",
            "duplicate key value violates unique constraint \"t_pkey\"\n  Detail: Key (id)=(1) already exists.",
        ),
        (
            "INSERT INTO t VALUES (2, 0)",
            "23514",
            "violates check constraint",
        ),
        (
            "SELEKT 1",
            "42601",
            "ERROR: syntax error at or near \"SELEKT\"",
        ),
        (
            "SELECT * FROM missing",
            "42P01",
            "relation \"missing\" does not exist\n  Position: 15",
        ),
        ("SELECT 1/0", "22012", "division by zero"),
        (
            "SELECT 1; SELECT 2",
            "42601",
            "cannot insert multiple commands",
        ),
    ] {
        let err = s
            .exec(sql)
            .send()
            .await
            .expect_err("SQL error")
            .into_service_error();
        assert!(err.is_database_error_exception(), "{sql}: {err:?}");
        let message = err.message().unwrap_or_default();
        assert!(message.starts_with("ERROR: "), "{sql}: {message}");
        assert!(message.contains(fragment), "{sql}: {message}");
        assert!(
            message.ends_with(&format!("; SQLState: {state}")),
            "{sql}: {message}"
        );
    }
}

/// A 127.0.0.1 port nothing listens on.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_postgres_is_database_unavailable() {
    let url = format!("postgres://postgres@127.0.0.1:{}/nowhere", dead_port());
    let (_api, endpoint) = serve(local_data_api::Config::new(url)).await;
    let client = sdk_client(&endpoint);

    let err = client
        .execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .sql("SELECT 1")
        .send()
        .await
        .expect_err("no database")
        .into_service_error();
    assert!(err.is_database_unavailable_exception(), "{err:?}");

    let err = client
        .begin_transaction()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .send()
        .await
        .expect_err("no database")
        .into_service_error();
    assert!(err.is_database_unavailable_exception(), "{err:?}");

    let err = client
        .batch_execute_statement()
        .resource_arn(RESOURCE_ARN)
        .secret_arn(SECRET_ARN)
        .sql("SELECT :a")
        .parameter_sets(vec![crate::support::param("a", Field::LongValue(1))])
        .send()
        .await
        .expect_err("no database")
        .into_service_error();
    assert!(err.is_database_unavailable_exception(), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_is_unavailable_and_loses_its_transaction() {
    let s = start().await;
    let pg = s.pg().await;

    // In a transaction: the backend dies, the call says unavailable, the
    // transaction is gone.
    let tx = s.begin().await;
    let pid = match only(&s.run_in(&tx, "SELECT pg_backend_pid()").await) {
        Field::LongValue(pid) => *pid,
        other => panic!("{other:?}"),
    };
    let pid = i32::try_from(pid).expect("pid");
    pg.execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .expect("terminate");
    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("connection lost")
        .into_service_error();
    assert!(err.is_database_unavailable_exception(), "{err:?}");
    let err = s
        .exec("SELECT 1")
        .transaction_id(&tx)
        .send()
        .await
        .expect_err("transaction lost")
        .into_service_error();
    assert!(err.is_transaction_not_found_exception(), "{err:?}");

    // Autocommit: a pooled connection that died is replaced, so the next
    // calls work.
    let pid = match only(&s.run("SELECT pg_backend_pid()").await) {
        Field::LongValue(pid) => *pid,
        other => panic!("{other:?}"),
    };
    let pid = i32::try_from(pid).expect("pid");
    pg.execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .expect("terminate");
    for _ in 0..3 {
        assert_eq!(only(&s.run("SELECT 1").await), &Field::LongValue(1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_bad_bodies_are_refused() {
    let s = start().await;
    // Raw HTTP, as no SDK would send these.
    let (status, headers, _) = raw_post(&s.endpoint, "/ExecuteSql", "{}").await;
    assert_eq!(status, 404);
    assert!(
        headers.contains("x-amzn-errortype: UnknownOperationException"),
        "{headers}"
    );

    let (status, headers, body) = raw_post(&s.endpoint, "/Execute", "{not json").await;
    assert_eq!(status, 400);
    assert!(
        headers.contains("x-amzn-errortype: BadRequestException"),
        "{headers}"
    );
    let body: serde_json::Value = serde_json::from_str(&body).expect("json error body");
    assert!(body["message"].as_str().is_some(), "{body}");
}

/// A minimal HTTP/1.1 POST over a TcpStream to 127.0.0.1.
async fn raw_post(endpoint: &str, path: &str, body: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("http response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    (status, head.to_string(), body.to_string())
}

/// `check_request` (what the fuzz target drives) is what the server answers
/// a bad request: the same shape and message, before any database work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_request_refuses_what_the_server_refuses_with_the_same_message() {
    let s = start().await;
    let http = reqwest::Client::new();
    let arns = format!(r#""resourceArn":"{RESOURCE_ARN}","secretArn":"{SECRET_ARN}""#);
    let cases: Vec<(&str, String)> = vec![
        ("/Execute", "{".into()),
        ("/Execute", format!("{{{arns}}}")),
        (
            "/Execute",
            format!(
                r#"{{{arns},"sql":"SELECT :a","parameters":[{{"name":"a","value":{{"stringValue":"x"}},"typeHint":"DATE"}}]}}"#
            ),
        ),
        (
            "/Execute",
            format!(r#"{{{arns},"sql":"SELECT 1","formatRecordsAs":"XML"}}"#),
        ),
        (
            "/BatchExecute",
            format!(
                r#"{{{arns},"sql":"SELECT :a","parameterSets":[[{{"name":"b","value":{{"longValue":1}}}}]]}}"#
            ),
        ),
        ("/BeginTransaction", r#"{"secretArn":"s"}"#.into()),
        ("/CommitTransaction", format!("{{{arns}}}")),
        ("/RollbackTransaction", "[]".into()),
    ];
    for (path, body) in cases {
        let checked = local_data_api::check_request(path, body.as_bytes())
            .expect_err(&format!("{path} {body}: refused"));
        let answer = http
            .post(format!("{}{path}", s.endpoint))
            .body(body.clone())
            .send()
            .await
            .expect("the server answers");
        assert_eq!(answer.status(), checked.status(), "{path} {body}");
        let kind = answer
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert_eq!(kind, checked.name(), "{path} {body}");
        let message: serde_json::Value = answer.json().await.expect("a JSON error");
        assert_eq!(message["message"], checked.message(), "{path} {body}");
    }
    let fine = format!(
        r#"{{{arns},"sql":"SELECT :a","parameters":[{{"name":"a","value":{{"longValue":1}}}}]}}"#
    );
    assert!(local_data_api::check_request("/Execute", fine.as_bytes()).is_ok());
}
