// A SaaS backend managing its customers' webhook endpoints and publishing to
// them, in SQL, from Node.js with node-postgres (docs/tenants.md), as
// tests/e2e/tests/publish_clients.rs runs it:
//
//     node tenants.mjs DSN TENANT SINK_URL
//     node tenants.mjs DSN --delete TENANT
//
// The same scenario as tenants.py; prints what it did as JSON.
import pg from "pg";

const [dsn, a, b] = process.argv.slice(2);
if (!dsn || !a || !b) {
  console.error("usage: node tenants.mjs DSN TENANT SINK_URL | DSN --delete TENANT");
  process.exit(2);
}

const client = new pg.Client({ connectionString: dsn });
await client.connect();
const one = async (sql, params) => (await client.query(sql, params)).rows.map((r) => Object.values(r)[0]);

try {
  if (a === "--delete") {
    const [gone] = await one("SELECT hookbox_tenant_delete($1)", [b]);
    console.log(JSON.stringify(gone));
  } else {
    const [tenant, sink] = [a, b];
    const out = {};
    await client.query("BEGIN");
    [out.tenant] = await one("SELECT hookbox_tenant_create($1::jsonb)", [
      JSON.stringify({ uid: tenant, name: `${tenant} Inc` }),
    ]);
    out.endpoints = {};
    for (const [uid, spec] of [
      ["orders", { filter_types: ["order.*"], headers: { "X-Tenant": tenant } }],
      ["all", { description: "every event" }],
    ]) {
      const [ep] = await one("SELECT hookbox_endpoint_create($1, $2::jsonb)", [
        tenant,
        JSON.stringify({ ...spec, uid, url: `${sink}/${tenant}/${uid}` }),
      ]);
      out.endpoints[uid] = ep.id;
    }
    await client.query("COMMIT");

    // a bad field: the statement fails naming it; the transaction aborts
    await client.query("BEGIN");
    try {
      await one("SELECT hookbox_endpoint_create($1, $2::jsonb)", [tenant, JSON.stringify({ url: "ftp://files.example" })]);
      out.refused = null;
    } catch (e) {
      out.refused = e.message;
    }
    await client.query("ROLLBACK");

    // publishing inside the business transaction: kept, then rolled back
    const publish = "SELECT CAST(hookbox_publish_to($1, $2, $3::jsonb) AS text)";
    await client.query("BEGIN");
    // ... the service's own business writes go here, in the same transaction ...
    out.kept = await one(publish, [tenant, "order.paid", JSON.stringify({ tenant, n: 1 })]);
    await client.query("COMMIT");
    await client.query("BEGIN");
    out.dropped = await one(publish, [tenant, "order.paid", JSON.stringify({ tenant, n: 2 })]);
    await client.query("ROLLBACK");

    await client.query("BEGIN");
    await one("SELECT hookbox_endpoint_update($1, $2, $3::jsonb)", [tenant, "all", JSON.stringify({ description: "all events, updated" })]);
    await one("SELECT hookbox_endpoint_rotate_secret($1, $2, 3600)", [tenant, "orders"]);
    const [page] = await one("SELECT hookbox_endpoint_list($1, NULL, 10)", [tenant]);
    out.listed = page.data.map((e) => e.uid).sort();
    const [audit] = await one("SELECT hookbox_audit_list($1)", [tenant]);
    out.audit = audit.data.map((e) => e.action);
    await client.query("COMMIT");
    console.log(JSON.stringify(out));
  }
} catch (e) {
  await client.query("ROLLBACK").catch(() => {});
  throw e;
} finally {
  await client.end();
}
