"""A SaaS backend managing its customers' webhook endpoints and publishing to
them, in SQL, from Python (docs/tenants.md), as
tests/e2e/tests/publish_clients.rs runs it.

    tenants.py postgres DSN TENANT SINK_URL
    tenants.py data-api ENDPOINT RESOURCE_ARN SECRET_ARN DATABASE TENANT SINK_URL
    tenants.py postgres DSN --delete TENANT
    tenants.py data-api ENDPOINT RESOURCE_ARN SECRET_ARN DATABASE --delete TENANT

Creates the tenant (uid TENANT) and two endpoints on SINK_URL/TENANT/…,
checks that a bad URL is refused naming the field, publishes one event in a
committed transaction and one in a rolled-back one, rotates a secret, lists
the endpoints and reads the audit trail; prints what it did as JSON. With
--delete, deletes the tenant and prints what went with it.
"""

import json
import sys


class Postgres:
    """psycopg: a transaction begins with the first statement."""

    def __init__(self, dsn):
        import psycopg

        self.errors = (psycopg.Error,)
        self.conn = psycopg.connect(dsn)

    def one(self, sql, *params):
        with self.conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), params)
            return [row[0] for row in cur.fetchall()]

    def commit(self):
        self.conn.commit()

    def rollback(self):
        self.conn.rollback()


class DataApi:
    """boto3's rds-data client, every statement in a transaction."""

    def __init__(self, endpoint, resource_arn, secret_arn, database):
        import boto3
        import botocore.exceptions

        self.errors = (botocore.exceptions.ClientError,)
        self.client = boto3.client(
            "rds-data",
            endpoint_url=endpoint,  # the local Data API in tests; omit it on AWS
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
        )
        self.target = {"resourceArn": resource_arn, "secretArn": secret_arn, "database": database}
        self.tx = None

    def one(self, sql, *params):
        if self.tx is None:
            self.tx = self.client.begin_transaction(**self.target)["transactionId"]
        names = []
        for i, _ in enumerate(params):
            sql = sql.replace("?", f":p{i}", 1)
            names.append(f"p{i}")
        out = self.client.execute_statement(
            transactionId=self.tx,
            sql=sql,
            parameters=[
                {"name": n, "value": {"isNull": True} if v is None else {"stringValue": str(v)}}
                for n, v in zip(names, params)
            ],
            **self.target,
        )
        values = []
        for record in out.get("records", []):
            field = record[0]
            values.append(None if field.get("isNull") else field.get("stringValue"))
        return values

    def end(self, how):
        if self.tx is not None:
            target = {k: v for k, v in self.target.items() if k != "database"}
            getattr(self.client, how)(transactionId=self.tx, **target)
            self.tx = None

    def commit(self):
        self.end("commit_transaction")

    def rollback(self):
        self.end("rollback_transaction")


def doc(value):
    """A jsonb result: psycopg decodes it, the Data API returns its text."""
    return json.loads(value) if isinstance(value, str) else value


def scenario(db, tenant, sink):
    out = {}
    out["tenant"] = doc(db.one(
        "SELECT hookbox_tenant_create(CAST(? AS jsonb))",
        json.dumps({"uid": tenant, "name": f"{tenant} Inc"}),
    )[0])
    endpoints = {}
    for uid, spec in [
        ("orders", {"filter_types": ["order.*"], "headers": {"X-Tenant": tenant}}),
        ("all", {"description": "every event"}),
    ]:
        spec.update({"uid": uid, "url": f"{sink}/{tenant}/{uid}"})
        endpoints[uid] = doc(db.one(
            "SELECT hookbox_endpoint_create(?, CAST(? AS jsonb))", tenant, json.dumps(spec)
        )[0])["id"]
    db.commit()
    out["endpoints"] = endpoints

    # a bad field: the statement fails naming it; the transaction aborts
    try:
        db.one("SELECT hookbox_endpoint_create(?, CAST(? AS jsonb))", tenant,
               json.dumps({"url": "ftp://files.example"}))
        out["refused"] = None
    except db.errors as e:
        out["refused"] = str(e)
    db.rollback()

    # publishing inside the business transaction: kept, then rolled back
    publish = "SELECT CAST(hookbox_publish_to(?, ?, CAST(? AS jsonb)) AS text)"
    # ... the service's own business writes go here, in the same transaction ...
    out["kept"] = db.one(publish, tenant, "order.paid", json.dumps({"tenant": tenant, "n": 1}))
    db.commit()
    out["dropped"] = db.one(publish, tenant, "order.paid", json.dumps({"tenant": tenant, "n": 2}))
    db.rollback()

    db.one("SELECT hookbox_endpoint_update(?, ?, CAST(? AS jsonb))", tenant, "all",
           json.dumps({"description": "all events, updated"}))
    db.one("SELECT hookbox_endpoint_rotate_secret(?, ?, 3600)", tenant, "orders")
    page = doc(db.one("SELECT hookbox_endpoint_list(?, NULL, 10)", tenant)[0])
    out["listed"] = sorted(e["uid"] for e in page["data"])
    out["audit"] = [a["action"] for a in doc(db.one("SELECT hookbox_audit_list(?)", tenant)[0])["data"]]
    db.commit()
    return out


def delete(db, tenant):
    out = doc(db.one("SELECT hookbox_tenant_delete(?)", tenant)[0])
    db.commit()
    return out


def main(argv):
    if argv[:1] == ["postgres"] and len(argv) == 4:
        db, rest = Postgres(argv[1]), argv[2:]
    elif argv[:1] == ["data-api"] and len(argv) == 7:
        db, rest = DataApi(*argv[1:5]), argv[5:]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if rest[0] == "--delete":
        print(json.dumps(delete(db, rest[1])))
    else:
        print(json.dumps(scenario(db, rest[0], rest[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
