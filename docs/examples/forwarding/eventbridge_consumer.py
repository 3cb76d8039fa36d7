"""A Lambda function behind an EventBridge rule: the consumer of a hookbox
EventBridge destination (docs/forwarding.md, "Consumers").

hookbox puts one event per delivery on the bus: `source` is the
destination's `source`, `detail-type` the event type, and `detail` the
envelope (docs/relay.md, "The envelope"):

    {"version": 1, "id": "<delivery id>", "type": "invoice.paid",
     "aggregate": {"type": "partner:stripe", "id": "cus_1"},
     "content_type": "application/json", "payload": {...}}

Deliveries are at least once: hookbox retries a delivery it is not sure of,
an operator may replay it (`hookbox outbox replay`), and EventBridge and
Lambda retry on their own. Every copy carries the same delivery id, the
envelope's `id`, and this function processes each id once: it claims the id
in a DynamoDB table with a conditional put, processes, then marks it done.

Settings (environment):
  DEDUP_TABLE      the DynamoDB table of claimed ids: partition key `id`
                   (string); turn on TTL on `expires_at`
  DEDUP_TTL_DAYS   how long a processed id is remembered (default 35):
                   longer than the hookbox deployment's HOOKBOX_RETENTION_DAYS
                   (30), the time during which a replay can send it again
AWS endpoints and credentials come from the standard AWS variables
(AWS_ENDPOINT_URL runs it against moto in the tests).

Role: dynamodb:PutItem, UpdateItem and DeleteItem on the table. Give the
function an on-failure destination (an SQS queue): an event whose
processing keeps failing ends there with its envelope.

tests/e2e/tests/forward_consumers.rs runs this handler on what a relay
delivered to moto's EventBridge, every event twice.
"""

import logging
import os
import time

import boto3
from botocore.exceptions import ClientError

log = logging.getLogger("eventbridge_consumer")
log.setLevel(logging.INFO)

TABLE = os.environ["DEDUP_TABLE"]
TTL_SECONDS = int(os.environ.get("DEDUP_TTL_DAYS", "35")) * 86400
# A claim's lease when the invocation's own deadline is unknown: Lambda's
# longest timeout.
DEFAULT_LEASE_SECONDS = 900

# Created once per execution environment, reused by every invocation.
dynamodb = boto3.client("dynamodb")


class InProgress(Exception):
    """Another invocation holds this delivery id's claim and may still be
    processing it. Raising makes Lambda retry the event later: by then that
    invocation has finished (the retry is a duplicate) or failed (its claim
    is released or its lease is over, and the retry processes it)."""


def handler(event, context):
    envelope = event["detail"]
    if envelope.get("version") != 1:
        # a schema this code does not know: fail, never guess
        version = envelope.get("version")
        raise ValueError(f"envelope version {version!r}: only version 1 is known")
    delivery_id = envelope["id"]

    # At least once, and once only: the id is claimed BEFORE processing,
    # for as long as this invocation can run (its lease), and marked done
    # AFTER. A failure deletes the claim and raises, so the retry processes
    # the event; a crash or a timeout, where no `except` runs, leaves a
    # claim whose lease ends with the invocation, so the retry takes it
    # over. Recording the id only after processing would let two copies
    # delivered at once both process it; recording it as done before
    # processing would lose the event if the invocation died in between.
    lease_until = claim(delivery_id, lease_seconds(context))
    if lease_until is None:
        log.info("duplicate delivery %s: already processed, acknowledged", delivery_id)
        return
    try:
        process(envelope)
    except Exception:
        release(delivery_id, lease_until)
        raise
    done(delivery_id)


def process(envelope):
    """The business: here, a log line. The payload is `envelope["payload"]`
    (JSON), or `payload_base64`, or `payload_ref` (an S3 object to read;
    docs/relay.md, "The envelope")."""
    aggregate = envelope["aggregate"]
    log.info(
        "processed delivery %s: %s of %s %s",
        envelope["id"],
        envelope["type"],
        aggregate["type"],
        aggregate["id"],
    )


def lease_seconds(context):
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if remaining is None:
        return DEFAULT_LEASE_SECONDS
    return remaining() // 1000 + 1


def claim(delivery_id, lease):
    """Claims the id: the end of this invocation's lease, which names its
    claim, or None when the id was processed already. Raises InProgress
    when another invocation's live claim holds it."""
    now = int(time.time())
    lease_until = str(now + lease)
    try:
        dynamodb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": delivery_id},
                "state": {"S": "processing"},
                "lease_until": {"N": lease_until},
                "expires_at": {"N": str(now + TTL_SECONDS)},
            },
            # a new id, or a claim left by an invocation that died
            ConditionExpression=(
                "attribute_not_exists(id) OR (#state = :processing AND lease_until < :now)"
            ),
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":processing": {"S": "processing"},
                ":now": {"N": str(now)},
            },
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        return lease_until
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        held = e.response.get("Item", {})
    if held.get("state", {}).get("S") == "processed":
        return None
    raise InProgress(f"delivery {delivery_id} is being processed by another invocation")


def release(delivery_id, lease_until):
    """Deletes this invocation's claim (not another's that took it over
    after the lease, nor a processed id)."""
    try:
        dynamodb.delete_item(
            TableName=TABLE,
            Key={"id": {"S": delivery_id}},
            ConditionExpression="#state = :processing AND lease_until = :mine",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues={
                ":processing": {"S": "processing"},
                ":mine": {"N": lease_until},
            },
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


def done(delivery_id):
    dynamodb.update_item(
        TableName=TABLE,
        Key={"id": {"S": delivery_id}},
        UpdateExpression="SET #state = :processed REMOVE lease_until",
        ExpressionAttributeNames={"#state": "state"},
        ExpressionAttributeValues={":processed": {"S": "processed"}},
    )
