//! Type mapping: parameters typed by Field + typeHint, results by column type.

use aws_sdk_rdsdata::error::ProvideErrorMetadata;
use aws_sdk_rdsdata::primitives::Blob;
use aws_sdk_rdsdata::types::{ArrayValue, Field, TypeHint};

use crate::support::{hinted, only, only_string, param, start, string};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_map_each_column_type_to_its_field() {
    let s = start().await;
    let out = s
        .run(
            "SELECT true, CAST(2 AS int2), CAST(4 AS int4), CAST(8 AS int8), CAST(26 AS oid), \
                    CAST(1.5 AS float4), CAST(2.25 AS float8), CAST(12.50 AS numeric), \
                    CAST('t' AS text), CAST('v' AS varchar), CAST('c' AS char(3)), \
                    CAST('n' AS name), CAST('x' AS \"char\"), \
                    CAST('6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11' AS uuid), \
                    CAST('{\"a\": [1, 2]}' AS json), CAST('{\"a\": [1, 2]}' AS jsonb), \
                    CAST('2024-01-02 03:04:05.123456+02' AS timestamptz), \
                    CAST('2024-01-02 03:04:05.5' AS timestamp), CAST('2024-02-29' AS date), \
                    CAST('13:14:15.25' AS time), CAST('\\x00ff10' AS bytea), \
                    CAST(NULL AS text), pg_sleep(0)",
        )
        .await;
    let row = &out.records()[0];
    let expected = vec![
        Field::BooleanValue(true),
        Field::LongValue(2),
        Field::LongValue(4),
        Field::LongValue(8),
        Field::LongValue(26),
        Field::DoubleValue(1.5),
        Field::DoubleValue(2.25),
        string("12.50"),
        string("t"),
        string("v"),
        string("c  "),
        string("n"),
        string("x"),
        string("6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11"),
        string("{\"a\": [1, 2]}"),
        string("{\"a\": [1, 2]}"),
        string("2024-01-02 01:04:05.123456"),
        string("2024-01-02 03:04:05.5"),
        string("2024-02-29"),
        string("13:14:15.25"),
        Field::BlobValue(Blob::new(vec![0x00, 0xff, 0x10])),
        Field::IsNull(true),
        Field::IsNull(true),
    ];
    assert_eq!(row, &expected);
    assert_eq!(out.number_of_records_updated(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numeric_results_are_exact_decimal_text() {
    let s = start().await;
    let values = [
        "0",
        "0.000",
        "1",
        "-1",
        "10000",
        "9999.9999",
        "-0.0001",
        "0.00001",
        "123456789012345678901234567890.123456789012345678901234567890",
        "-98765432109876543210",
        "1e-30",
        "1e40",
        "3.14159265358979323846",
        "100.10",
        "NaN",
        "Infinity",
        "-Infinity",
    ];
    let list = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("({i}, CAST('{v}' AS numeric))"))
        .collect::<Vec<_>>()
        .join(", ");
    let out = s
        .run(&format!(
            "SELECT CAST(v AS text), v FROM (VALUES {list}) AS t(i, v) ORDER BY i"
        ))
        .await;
    assert_eq!(out.records().len(), values.len());
    for row in out.records() {
        // PostgreSQL's own text output is the reference.
        assert_eq!(row[0], row[1], "numeric decoded differently from ::text");
    }
    let first = &out.records()[8][1];
    assert_eq!(
        first,
        &string("123456789012345678901234567890.123456789012345678901234567890")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_are_utc_text_with_every_microsecond() {
    let s = start().await;
    let out = s
        .run(
            "SELECT current_setting('TimeZone'), \
                    CAST('2024-06-30 23:59:59.999999-05' AS timestamptz), \
                    CAST('2024-01-02 03:04:05.120+00' AS timestamptz), \
                    CAST('2024-01-02 03:04:05+00' AS timestamptz), \
                    CAST('2024-01-02 03:04:05.000001' AS timestamp), \
                    CAST('00:00:00' AS time), \
                    CAST('infinity' AS timestamptz)",
        )
        .await;
    assert_eq!(
        out.records()[0],
        vec![
            string("UTC"),
            string("2024-07-01 04:59:59.999999"),
            string("2024-01-02 03:04:05.12"),
            string("2024-01-02 03:04:05"),
            string("2024-01-02 03:04:05.000001"),
            string("00:00:00"),
            string("infinity"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_are_typed_by_field_and_type_hint() {
    let s = start().await;
    let out = s
        .exec(
            "SELECT CAST(pg_typeof(:s) AS text), CAST(pg_typeof(:u) AS text), \
                    CAST(pg_typeof(:j) AS text), CAST(pg_typeof(:ts) AS text), \
                    CAST(pg_typeof(:d) AS text), CAST(pg_typeof(:t) AS text), \
                    CAST(pg_typeof(:dec) AS text), CAST(pg_typeof(:l) AS text), \
                    CAST(pg_typeof(:b) AS text), CAST(pg_typeof(:f) AS text), \
                    CAST(pg_typeof(:bytes) AS text)",
        )
        .parameters(param("s", string("x")))
        .parameters(hinted(
            "u",
            string("6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11"),
            TypeHint::Uuid,
        ))
        .parameters(hinted("j", string("{\"a\":1}"), TypeHint::Json))
        .parameters(hinted(
            "ts",
            string("2024-01-02 03:04:05.123456"),
            TypeHint::Timestamp,
        ))
        .parameters(hinted("d", string("2024-01-02"), TypeHint::Date))
        .parameters(hinted("t", string("03:04:05.5"), TypeHint::Time))
        .parameters(hinted("dec", string("12.345"), TypeHint::Decimal))
        .parameters(param("l", Field::LongValue(1)))
        .parameters(param("b", Field::BooleanValue(true)))
        .parameters(param("f", Field::DoubleValue(0.5)))
        .parameters(param("bytes", Field::BlobValue(Blob::new(vec![1, 2]))))
        .send()
        .await
        .expect("typed parameters");
    let names: Vec<String> = out.records()[0]
        .iter()
        .map(|f| match f {
            Field::StringValue(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "character varying",
            "uuid",
            "json",
            "timestamp without time zone",
            "date",
            "time without time zone",
            "numeric",
            "bigint",
            "boolean",
            "double precision",
            "bytea",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameter_values_round_trip() {
    let s = start().await;
    s.run(
        "CREATE TABLE t (id uuid PRIMARY KEY, doc jsonb, at timestamptz, day date, \
                         amount numeric(10, 3), n bigint, ok boolean, x float8, body bytea, \
                         note text)",
    )
    .await;
    let inserted = s
        .exec(
            "INSERT INTO t VALUES (:id, :doc, CAST(:at AS timestamptz), :day, :amount, :n, :ok, \
                                   :x, :body, :note)",
        )
        .parameters(hinted(
            "id",
            string("6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11"),
            TypeHint::Uuid,
        ))
        .parameters(hinted("doc", string("{\"k\": \"v\"}"), TypeHint::Json))
        .parameters(param("at", string("2024-01-02T03:04:05.654321Z")))
        .parameters(hinted("day", string("2024-12-31"), TypeHint::Date))
        .parameters(hinted("amount", string("1234.5"), TypeHint::Decimal))
        .parameters(param("n", Field::LongValue(i64::MIN)))
        .parameters(param("ok", Field::BooleanValue(false)))
        .parameters(param("x", Field::DoubleValue(-2.5e-10)))
        .parameters(param(
            "body",
            Field::BlobValue(Blob::new(vec![0, 1, 2, 254, 255])),
        ))
        .parameters(param("note", Field::IsNull(true)))
        .send()
        .await
        .expect("insert");
    assert_eq!(inserted.number_of_records_updated(), 1);
    let out = s.run("SELECT * FROM t").await;
    assert_eq!(
        out.records()[0],
        vec![
            string("6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11"),
            string("{\"k\": \"v\"}"),
            string("2024-01-02 03:04:05.654321"),
            string("2024-12-31"),
            string("1234.500"),
            Field::LongValue(i64::MIN),
            Field::BooleanValue(false),
            Field::DoubleValue(-2.5e-10),
            Field::BlobValue(Blob::new(vec![0, 1, 2, 254, 255])),
            Field::IsNull(true),
        ]
    );
    // A parameter used twice is bound once; unused parameters are fine.
    let out = s
        .exec("SELECT CAST(:a AS text) || CAST(:a AS text)")
        .parameters(param("a", string("ab")))
        .parameters(param("unused", Field::LongValue(1)))
        .send()
        .await
        .expect("reused parameter");
    assert_eq!(only_string(&out), "abab");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_is_not_a_uuid_without_hint_or_cast() {
    let s = start().await;
    s.run("CREATE TABLE t (id uuid PRIMARY KEY)").await;
    s.run("INSERT INTO t VALUES ('6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11')")
        .await;
    let id = "6f1c2a70-8d38-4d1e-9f55-0a4b0c8c2f11";

    let err = s
        .exec("SELECT count(*) FROM t WHERE id = :id")
        .parameters(param("id", string(id)))
        .send()
        .await
        .expect_err("varchar = uuid must fail as on Aurora")
        .into_service_error();
    assert!(err.is_database_error_exception(), "{err:?}");
    let message = err.message().unwrap_or_default();
    assert!(
        message.contains("operator does not exist: uuid = character varying"),
        "{message}"
    );
    assert!(message.ends_with("SQLState: 42883"), "{message}");

    for request in [
        s.exec("SELECT count(*) FROM t WHERE id = :id")
            .parameters(hinted("id", string(id), TypeHint::Uuid)),
        s.exec("SELECT count(*) FROM t WHERE id = CAST(:id AS uuid)")
            .parameters(param("id", string(id))),
        s.exec("SELECT count(*) FROM t WHERE id = :id::uuid")
            .parameters(param("id", string(id))),
    ] {
        let out = request.send().await.expect("typed comparison");
        assert_eq!(only(&out), &Field::LongValue(1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hinted_values_are_checked() {
    let s = start().await;
    // The TIMESTAMP hint takes `YYYY-MM-DD HH:MM:SS[.FFFFFF]` only.
    for bad in [
        "2024-01-02T03:04:05Z",
        "2024-01-02 03:04:05+00",
        "2024-01-02",
    ] {
        let err = s
            .exec("SELECT :at")
            .parameters(hinted("at", string(bad), TypeHint::Timestamp))
            .send()
            .await
            .expect_err("not the documented timestamp format")
            .into_service_error();
        assert!(err.is_bad_request_exception(), "{bad}: {err:?}");
        assert!(
            err.message().unwrap_or_default().contains(bad),
            "{bad}: {err:?}"
        );
    }
    let err = s
        .exec("SELECT :d")
        .parameters(hinted("d", string("31/12/2024"), TypeHint::Date))
        .send()
        .await
        .expect_err("bad date")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");

    // Values PostgreSQL parses are PostgreSQL's errors.
    for (value, hint) in [
        ("not-a-uuid", TypeHint::Uuid),
        ("{broken", TypeHint::Json),
        ("12,5", TypeHint::Decimal),
    ] {
        let err = s
            .exec("SELECT :v")
            .parameters(hinted("v", string(value), hint.clone()))
            .send()
            .await
            .expect_err("invalid input")
            .into_service_error();
        assert!(err.is_database_error_exception(), "{value}: {err:?}");
        assert!(
            err.message().unwrap_or_default().contains("SQLState: 22"),
            "{value}: {err:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_need_a_value_for_every_name_and_no_arrays() {
    let s = start().await;
    let err = s
        .exec("SELECT :a, :b")
        .parameters(param("a", Field::LongValue(1)))
        .send()
        .await
        .expect_err("missing :b")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert!(err.message().unwrap_or_default().contains(":b"), "{err:?}");

    let err = s
        .exec("SELECT :a")
        .parameters(param(
            "a",
            Field::ArrayValue(ArrayValue::LongValues(vec![1, 2])),
        ))
        .send()
        .await
        .expect_err("arrays are not supported")
        .into_service_error();
    assert!(err.is_bad_request_exception(), "{err:?}");
    assert!(
        err.message().unwrap_or_default().contains("array"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_result_types_are_named() {
    let s = start().await;
    for (sql, type_name) in [
        ("SELECT interval '1 day'", "interval"),
        ("SELECT ARRAY[1, 2]", "int4[]"),
        ("SELECT CAST('127.0.0.1' AS inet)", "inet"),
    ] {
        let err = s
            .exec(sql)
            .send()
            .await
            .expect_err("unsupported type")
            .into_service_error();
        assert!(err.is_unsupported_result_exception(), "{sql}: {err:?}");
        assert!(
            err.message().unwrap_or_default().contains(type_name),
            "{sql}: {err:?}"
        );
    }
    // A NULL of any type is just null; casting to text is the way out.
    let out = s
        .run("SELECT CAST(NULL AS interval), CAST(interval '1 day' AS text)")
        .await;
    assert_eq!(out.records()[0], vec![Field::IsNull(true), string("1 day")]);
}
