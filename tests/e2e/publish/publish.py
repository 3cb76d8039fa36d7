"""Publishing to hookbox from a Python service, inside the service's own
transaction (docs/publishing.md), as tests/e2e/tests/publish_clients.rs runs it.

    publish.py postgres DSN ORDER_ID commit|rollback
    publish.py data-api ENDPOINT RESOURCE_ARN SECRET_ARN DATABASE ORDER_ID commit|rollback

Prints the ids hookbox_publish returned (one per subscribed destination: each
delivery's webhook-id) as a JSON list.
"""

import json
import sys


def payload(order_id):
    return {"order_id": order_id, "currency": "EUR", "amount_cents": 1250}


def with_psycopg(dsn, order_id, end):
    import psycopg

    with psycopg.connect(dsn) as conn:  # a transaction begins with the first statement
        with conn.cursor() as cur:
            # ... the service's own business writes go here, in the same transaction ...
            cur.execute(
                "SELECT hookbox_publish(%s, %s::jsonb, %s, %s)",
                ("order.paid", json.dumps(payload(order_id)), "order", order_id),
            )
            ids = [str(row[0]) for row in cur.fetchall()]
        if end == "commit":
            conn.commit()
        else:
            conn.rollback()  # nothing of it is delivered
    return ids


def with_data_api(endpoint, resource_arn, secret_arn, database, order_id, end):
    import boto3

    client = boto3.client(
        "rds-data",
        endpoint_url=endpoint,  # the local Data API in tests; omit it on AWS
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    target = {"resourceArn": resource_arn, "secretArn": secret_arn}
    tx = client.begin_transaction(database=database, **target)["transactionId"]
    try:
        out = client.execute_statement(
            database=database,
            transactionId=tx,
            sql="SELECT hookbox_publish(:event_type, CAST(:payload AS jsonb), :aggregate_type, :aggregate_id) AS id",
            parameters=[
                {"name": "event_type", "value": {"stringValue": "order.paid"}},
                {"name": "payload", "value": {"stringValue": json.dumps(payload(order_id))}},
                {"name": "aggregate_type", "value": {"stringValue": "order"}},
                {"name": "aggregate_id", "value": {"stringValue": order_id}},
            ],
            **target,
        )
        ids = [record[0]["stringValue"] for record in out.get("records", [])]
    except Exception:
        client.rollback_transaction(transactionId=tx, **target)
        raise
    if end == "commit":
        client.commit_transaction(transactionId=tx, **target)
    else:
        client.rollback_transaction(transactionId=tx, **target)
    return ids


def main(argv):
    if len(argv) == 4 and argv[0] == "postgres":
        ids = with_psycopg(*argv[1:])
    elif len(argv) == 7 and argv[0] == "data-api":
        ids = with_data_api(*argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
