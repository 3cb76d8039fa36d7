// The consumer of a hookbox SQS destination (docs/forwarding.md,
// "Consumers"): long-polls the queue, processes each delivery once, then
// deletes its message.
//
// Each message's body is the envelope (docs/relay.md, "The envelope"):
//
//   {"version": 1, "id": "<delivery id>", "type": "invoice.paid",
//    "aggregate": {"type": "partner:stripe", "id": "cus_1"},
//    "content_type": "application/json", "payload": {...}}
//
// On a FIFO queue the message group is the aggregate, its type and id
// (`partner:stripe/cus_1`: the partner and its ordering key), so one key's
// deliveries arrive in the order hookbox received them, and the
// deduplication id is the delivery id.
//
// Deliveries are at least once: hookbox retries a delivery it is not sure
// of, an operator may replay it (`hookbox outbox replay`), SQS forgets a
// FIFO deduplication id after five minutes, and a message not deleted in
// time is received again. Every copy carries the same delivery id, the
// envelope's `id`; this consumer claims it in a DynamoDB table with a
// conditional put before processing and marks it done after, so each id
// is processed once. A failure releases the claim and leaves the message
// (it comes back after its visibility timeout, then to the queue's
// dead-letter queue after maxReceiveCount); a crash leaves a claim whose
// lease ends when the message becomes visible again, so the next receive
// takes it over. (Recording the id only after processing would let two
// copies received at once both process it; recording it as done before
// processing would lose the delivery on a crash in between.)
//
// Run: QUEUE_URL=… DEDUP_TABLE=… node sqs_consumer.mjs [--once]
//   QUEUE_URL              the destination's queue_url
//   DEDUP_TABLE            DynamoDB table, partition key `id` (string), TTL on
//                          `expires_at`
//   DEDUP_TTL_DAYS         how long a processed id is remembered (default 35:
//                          longer than HOOKBOX_RETENTION_DAYS, 30, the time
//                          during which a replay can send it again)
//   VISIBILITY_SECONDS     how long a received message (and its claim) is
//                          this consumer's (default 60): longer than any
//                          processing takes, or the message comes back
//                          while it is being processed
//   WAIT_SECONDS           long-poll wait (default 20)
//   --once                 exit after the first poll that returns nothing
// AWS endpoints and credentials come from the standard AWS variables
// (AWS_ENDPOINT_URL runs it against moto in the tests). Permissions:
// sqs:ReceiveMessage and sqs:DeleteMessage on the queue,
// dynamodb:PutItem, UpdateItem and DeleteItem on the table.
//
// tests/e2e/tests/forward_consumers.rs runs it against moto, across a replay.

import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from "@aws-sdk/client-sqs";

const queueUrl = required("QUEUE_URL");
const table = required("DEDUP_TABLE");
const ttlSeconds = Number(process.env.DEDUP_TTL_DAYS ?? 35) * 86400;
const visibilitySeconds = Number(process.env.VISIBILITY_SECONDS ?? 60);
const waitSeconds = Number(process.env.WAIT_SECONDS ?? 20);
const once = process.argv.includes("--once");

const sqs = new SQSClient({});
const dynamodb = new DynamoDBClient({});

// SIGINT, SIGTERM: stop polling, finish the batch in hand, then exit
const stop = new AbortController();
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => stop.abort());
}

// The business: here, a log line. The payload is `envelope.payload` (JSON),
// or `payload_base64`, or `payload_ref` (an S3 object to read).
async function processDelivery(envelope) {
  const { type, id } = envelope.aggregate;
  console.log(`processed delivery ${envelope.id}: ${envelope.type} of ${type} ${id}`);
}

const receive = new ReceiveMessageCommand({
  QueueUrl: queueUrl,
  MaxNumberOfMessages: 10,
  WaitTimeSeconds: waitSeconds,
  VisibilityTimeout: visibilitySeconds,
  MessageSystemAttributeNames: ["MessageGroupId"],
});
while (!stop.signal.aborted) {
  let Messages;
  try {
    ({ Messages = [] } = await sqs.send(receive, { abortSignal: stop.signal }));
  } catch (error) {
    if (stop.signal.aborted) break;
    throw error;
  }
  if (Messages.length === 0) {
    if (once) break;
    continue;
  }
  // in order: a FIFO batch holds a group's messages in the group's order
  const failedGroups = new Set();
  for (const message of Messages) {
    const group = message.Attributes?.MessageGroupId;
    if (group !== undefined && failedGroups.has(group)) {
      continue; // behind a failed message of its group: comes back after it
    }
    try {
      await handle(message);
    } catch (error) {
      console.error(`message ${message.MessageId} left for a retry: ${error.message}`);
      if (group !== undefined) failedGroups.add(group);
    }
  }
}

async function handle(message) {
  const envelope = JSON.parse(message.Body);
  if (envelope.version !== 1) {
    // a schema this code does not know: never guess (the message goes to
    // the dead-letter queue after its receives)
    const version = JSON.stringify(envelope.version);
    throw new Error(`envelope version ${version}: only version 1 is known`);
  }
  const deliveryId = envelope.id;
  const leaseUntil = await claim(deliveryId);
  if (leaseUntil === null) {
    console.log(`duplicate delivery ${deliveryId}: already processed, deleted`);
  } else {
    try {
      await processDelivery(envelope);
    } catch (error) {
      await release(deliveryId, leaseUntil);
      throw error;
    }
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { id: { S: deliveryId } },
        UpdateExpression: "SET #state = :processed REMOVE lease_until",
        ExpressionAttributeNames: { "#state": "state" },
        ExpressionAttributeValues: { ":processed": { S: "processed" } },
      }),
    );
  }
  await sqs.send(
    new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }),
  );
}

// Claims the id for as long as the message is this consumer's: the end of
// the lease, which names the claim, or null when the id was processed
// already. Throws when another consumer's live claim holds it (its message
// copy is being processed; this copy comes back after its visibility
// timeout and is then a duplicate, or takes the claim over).
async function claim(deliveryId) {
  const now = Math.floor(Date.now() / 1000);
  const leaseUntil = String(now + visibilitySeconds);
  try {
    await dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: {
          id: { S: deliveryId },
          state: { S: "processing" },
          lease_until: { N: leaseUntil },
          expires_at: { N: String(now + ttlSeconds) },
        },
        // a new id, or a claim left by a consumer that died
        ConditionExpression:
          "attribute_not_exists(id) OR (#state = :processing AND lease_until < :now)",
        ExpressionAttributeNames: { "#state": "state" },
        ExpressionAttributeValues: {
          ":processing": { S: "processing" },
          ":now": { N: String(now) },
        },
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    return leaseUntil;
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    if (error.Item?.state?.S === "processed") return null;
    throw new Error(`delivery ${deliveryId} is being processed by another consumer`);
  }
}

// Deletes this consumer's claim (not another's that took it over after the
// lease, nor a processed id).
async function release(deliveryId, leaseUntil) {
  try {
    await dynamodb.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { id: { S: deliveryId } },
        ConditionExpression: "#state = :processing AND lease_until = :mine",
        ExpressionAttributeNames: { "#state": "state" },
        ExpressionAttributeValues: {
          ":processing": { S: "processing" },
          ":mine": { N: leaseUntil },
        },
      }),
    );
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
  }
}

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return value;
}
