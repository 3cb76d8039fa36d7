// Publishing to hookbox from a Node.js service with node-postgres, inside the
// service's own transaction (docs/publishing.md), as
// tests/e2e/tests/publish_clients.rs runs it:
//
//     node publish.mjs DSN ORDER_ID commit|rollback
//
// Prints the ids hookbox_publish returned (one per subscribed destination:
// each delivery's webhook-id) as a JSON list.
import pg from "pg";

const [dsn, orderId, end] = process.argv.slice(2);
if (!dsn || !orderId || !["commit", "rollback"].includes(end)) {
  console.error("usage: node publish.mjs DSN ORDER_ID commit|rollback");
  process.exit(2);
}

const client = new pg.Client({ connectionString: dsn });
await client.connect();
try {
  await client.query("BEGIN");
  // ... the service's own business writes go here, in the same transaction ...
  const payload = { order_id: orderId, currency: "EUR", amount_cents: 1250 };
  const { rows } = await client.query(
    "SELECT hookbox_publish($1, $2::jsonb, $3, $4) AS id",
    ["order.paid", JSON.stringify(payload), "order", orderId],
  );
  await client.query(end === "commit" ? "COMMIT" : "ROLLBACK");
  console.log(JSON.stringify(rows.map((r) => r.id)));
} catch (e) {
  await client.query("ROLLBACK").catch(() => {});
  throw e;
} finally {
  await client.end();
}
