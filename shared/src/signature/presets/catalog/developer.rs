//! Developer tools: code hosting, issue trackers, monitoring, deployments.

use super::*;

pub(crate) const BITBUCKET: Preset = Preset {
    name: "bitbucket",
    provider: "Bitbucket Cloud",
    recipe: body_hmac(SHA256, &["X-Hub-Signature"], &["sha256="], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("X-Request-UUID"),
    event_type: Header("X-Event-Key"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
    sample: Sample {
        headers: &[
            ("X-Request-UUID", "afe8d8a5-2a57-4a4c-9b3e-0d6d0e2a4c11"),
            ("X-Event-Key", "repo:push"),
        ],
        body: r#"{"push":{"changes":[]}}"#,
    },
};

pub(crate) const GITHUB: Preset = Preset {
    name: "github",
    provider: "GitHub",
    recipe: Recipe::Scheme(SchemeKind::Github),
    tolerance_secs: None,
    event_id: Header("X-GitHub-Delivery"),
    event_type: Header("X-GitHub-Event"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
    sample: Sample {
        headers: &[
            ("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
            ("X-GitHub-Event", "issues"),
        ],
        body: r#"{"action":"opened","issue":{"number":1}}"#,
    },
};

pub(crate) const GITLAB: Preset = Preset {
    name: "gitlab",
    provider: "GitLab",
    recipe: Recipe::Token {
        header: "X-Gitlab-Token",
    },
    tolerance_secs: None,
    event_id: Header("X-Gitlab-Event-UUID"),
    event_type: Header("X-Gitlab-Event"),
    handshake: None,
    secret: "the webhook's secret token (sent as is in `X-Gitlab-Token`); where the GitLab instance offers a signing token, prefer it and the `gitlab-signed` preset, which proves the body",
    docs: "https://docs.gitlab.com/user/project/integrations/webhooks/",
    sample: Sample {
        headers: &[
            (
                "X-Gitlab-Event-UUID",
                "13792a34-cac6-4fda-95a8-c58e00a3954e",
            ),
            ("X-Gitlab-Event", "Push Hook"),
        ],
        body: r#"{"object_kind":"push","ref":"refs/heads/main"}"#,
    },
};

/// GitLab's signing token (Standard Webhooks: `webhook-id`, which is the
/// request's `Idempotency-Key`, `webhook-timestamp`, `webhook-signature`).
pub(crate) const GITLAB_SIGNED: Preset = Preset {
    name: "gitlab-signed",
    provider: "GitLab (webhooks with a signing token)",
    recipe: Recipe::Scheme(SchemeKind::StandardWebhooks),
    tolerance_secs: Some(300),
    event_id: Header("webhook-id"),
    event_type: Header("X-Gitlab-Event"),
    handshake: None,
    secret: "the webhook's signing token (`whsec_…`, a 32-byte key)",
    docs: "https://docs.gitlab.com/user/project/integrations/webhooks/",
    sample: Sample {
        headers: &[
            ("webhook-id", "3b5a0b9e-8f65-4d4f-9a57-0c2f0e0d6c11"),
            ("X-Gitlab-Event", "Push Hook"),
        ],
        body: r#"{"object_kind":"push","ref":"refs/heads/main"}"#,
    },
};

pub(crate) const JIRA: Preset = Preset {
    name: "jira",
    provider: "Jira / Atlassian (webhooks with a secret)",
    recipe: body_hmac(SHA256, &["X-Hub-Signature"], &["sha256="], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("X-Atlassian-Webhook-Identifier"),
    event_type: Json("/webhookEvent"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://developer.atlassian.com/cloud/jira/platform/webhooks/#secure-admin-webhooks",
    sample: Sample {
        headers: &[("X-Atlassian-Webhook-Identifier", "2001")],
        body: r#"{"timestamp":1700000000000,"webhookEvent":"jira:issue_created","issue":{"key":"HB-1"}}"#,
    },
};

pub(crate) const LINEAR: Preset = Preset {
    name: "linear",
    provider: "Linear",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["Linear-Signature"],
            prefixes: &[""],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: BODY,
        // Inside the signed body, a JSON number (Linear's SDK refuses a
        // string).
        timestamp: Some(TimestampAt {
            source: TimestampSource::Json("/webhookTimestamp"),
            format: TimeFormat::MillisNumber,
        }),
    }),
    tolerance_secs: Some(60),
    event_id: Header("Linear-Delivery"),
    event_type: Header("Linear-Event"),
    handshake: None,
    secret: "the webhook's signing secret (text)",
    docs: "https://linear.app/developers/webhooks#securing-webhooks",
    sample: Sample {
        headers: &[
            ("Linear-Delivery", "234d1a4e-b617-4388-90fe-adc3633d6b72"),
            ("Linear-Event", "Issue"),
        ],
        body: r#"{"action":"create","type":"Issue","webhookTimestamp":1676056940508}"#,
    },
};

pub(crate) const NETLIFY: Preset = Preset {
    name: "netlify",
    provider: "Netlify (deploy notifications)",
    recipe: Recipe::Jws {
        header: "X-Webhook-Signature",
        issuer: "netlify",
    },
    tolerance_secs: None,
    // One deploy notifies several times (created, building, ready): the
    // deploy id alone would drop the later notifications as duplicates.
    event_id: Composite(&[Json("/id"), Json("/state")]),
    event_type: Json("/state"),
    handshake: None,
    secret: "the notification's JWS secret token (text)",
    docs: "https://docs.netlify.com/site-deploys/notifications/#payload-signature",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"5ebc34bf4fea0b01f02efa3a","site_id":"fa4dd95a-994e-4f89-8a7a-2d9e9fc36a32","build_id":"5ebc34bf4fea0b01f02efa38","state":"ready","branch":"main","context":"production"}"#,
    },
};

pub(crate) const PAGERDUTY: Preset = Preset {
    name: "pagerduty",
    provider: "PagerDuty (webhooks v3)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-PagerDuty-Signature"],
            prefixes: &["v1="],
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        message: BODY,
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Json("/event/id"),
    event_type: Json("/event/event_type"),
    handshake: None,
    secret: "the subscription's signing secret (text)",
    docs: "https://developer.pagerduty.com/docs/webhooks-overview#verifying-signatures",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"event":{"id":"01BZZZZ","event_type":"incident.triggered","data":{}}}"#,
    },
};

pub(crate) const SENTRY: Preset = Preset {
    name: "sentry",
    provider: "Sentry (integration platform)",
    recipe: body_hmac(SHA256, &["Sentry-Hook-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("Request-ID"),
    event_type: Header("Sentry-Hook-Resource"),
    handshake: None,
    secret: "the integration's client secret (text)",
    docs: "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/#verifying-the-signature",
    sample: Sample {
        headers: &[
            ("Request-ID", "2c9b2bd4-ab1f-4b34-9ec9-ef3bb4f0ee48"),
            ("Sentry-Hook-Resource", "issue"),
        ],
        body: r#"{"action":"created","data":{"issue":{"id":"1"}}}"#,
    },
};

pub(crate) const VERCEL: Preset = Preset {
    name: "vercel",
    provider: "Vercel",
    recipe: body_hmac(SHA1, &["x-vercel-signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's secret, or the integration's client secret (text)",
    docs: "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"A2YMRvMzpcaYM0TZS8FiYRTV","type":"deployment.created","payload":{}}"#,
    },
};

pub(crate) const WORKOS: Preset = Preset {
    name: "workos",
    provider: "WorkOS",
    recipe: t_dot_body(&["WorkOS-Signature"], &["v1="], TimeFormat::Millis),
    // The official SDK refuses a signature over 3 minutes old.
    tolerance_secs: Some(180),
    event_id: Json("/id"),
    event_type: Json("/event"),
    handshake: None,
    secret: "the webhook endpoint's secret",
    docs: "https://workos.com/docs/events/data-syncing/webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"event_01HZ0000000000000000000000","event":"user.created","data":{"object":"user","id":"user_01"},"created_at":"2023-11-14T22:13:20.000Z"}"#,
    },
};

pub(crate) const ALCHEMY: Preset = Preset {
    name: "alchemy",
    provider: "Alchemy (Notify webhooks)",
    recipe: body_hmac(SHA256, &["X-Alchemy-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing key (Dashboard, Webhooks; text)",
    docs: "https://www.alchemy.com/docs/reference/notify-api-quickstart#webhook-signature--security",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"webhookId":"wh_octjglnywaupz6th","id":"whevt_ogrc5v64myey69ux","createdAt":"2023-11-14T22:13:20.000Z","type":"ADDRESS_ACTIVITY","event":{"network":"ETH_MAINNET","activity":[]}}"#,
    },
};

pub(crate) const BUILDKITE: Preset = Preset {
    name: "buildkite",
    provider: "Buildkite (webhooks with a signature)",
    // `timestamp=<s>,signature=<hex>` over `{timestamp}.{body}`.
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-Buildkite-Signature"],
            prefixes: &["signature="],
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        message: &[Part::Timestamp, Part::Text("."), Part::Body],
        timestamp: Some(TimestampAt {
            source: TimestampSource::SignatureItem("timestamp"),
            format: TimeFormat::Seconds,
        }),
    }),
    // Buildkite advises checking the timestamp against replays: the usual
    // 5 minutes.
    tolerance_secs: Some(300),
    event_id: Absent,
    event_type: Header("X-Buildkite-Event"),
    handshake: None,
    secret: "the webhook's token, with the webhook set to send a signature rather than the token (text)",
    docs: "https://buildkite.com/docs/apis/webhooks#webhook-signature",
    sample: Sample {
        headers: &[("X-Buildkite-Event", "build.finished")],
        body: r#"{"event":"build.finished","build":{"id":"f62a1b4d-10f9-4790-bc1c-e2c3a0c80983","number":42,"state":"passed"},"pipeline":{"slug":"hookbox"},"sender":{"name":"Some Person"}}"#,
    },
};

pub(crate) const CIRCLECI: Preset = Preset {
    name: "circleci",
    provider: "CircleCI (outbound webhooks)",
    // `v1=<hex>`, in a list of versioned signatures: only `v1` is read
    // (CircleCI: check the latest version only, against downgrades).
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["circleci-signature"],
            prefixes: &["v1="],
            separator: Some(','),
        },
        encoding: Encoding::Hex,
        message: BODY,
        timestamp: None,
    }),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's secret token (text)",
    docs: "https://circleci.com/docs/guides/integration/outbound-webhooks/#validate-webhooks",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"id":"3888f21b-eaa7-38e3-8f3d-75a63bba8895","type":"workflow-completed","happened_at":"2023-11-14T22:13:20.000Z","webhook":{"id":"cf8c4fdd-0587-4da1-b4ca-4846e9640af9","name":"hookbox"},"workflow":{"id":"fda08377-fe7e-46b1-8992-3a7aaecac9c3","status":"success"}}"#,
    },
};

pub(crate) const FRAME_IO: Preset = Preset {
    name: "frame-io",
    provider: "Frame.io (webhooks)",
    recipe: Recipe::Signed(Signed {
        primitive: SHA256,
        signature: SignatureAt::Headers {
            names: &["X-Frameio-Signature"],
            prefixes: &["v0="],
            separator: None,
        },
        encoding: Encoding::Hex,
        message: &[
            Part::Text("v0:"),
            Part::Timestamp,
            Part::Text(":"),
            Part::Body,
        ],
        timestamp: in_header("X-Frameio-Request-Timestamp", TimeFormat::Seconds),
    }),
    // Frame.io advises refusing an old timestamp against replays: the usual
    // 5 minutes.
    tolerance_secs: Some(300),
    event_id: Absent,
    event_type: Json("/type"),
    handshake: None,
    secret: "the webhook's signing secret (returned when the webhook is created; text)",
    docs: "https://developer.frame.io/docs/automations-webhooks/webhooks-overview",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"type":"asset.created","resource":{"type":"asset","id":"5e2b3b5d-52c7-4b4a-9b8c-9c8d5e6f7a8b"},"account":{"id":"a1b2c3d4-0000-4000-8000-000000000001"},"team":{"id":"a1b2c3d4-0000-4000-8000-000000000002"},"user":{"id":"a1b2c3d4-0000-4000-8000-000000000003"}}"#,
    },
};

pub(crate) const GITEA: Preset = Preset {
    name: "gitea",
    provider: "Gitea / Forgejo",
    recipe: body_hmac(SHA256, &["X-Gitea-Signature"], &[""], Encoding::Hex),
    tolerance_secs: None,
    event_id: Header("X-Gitea-Delivery"),
    event_type: Header("X-Gitea-Event"),
    handshake: None,
    secret: "the webhook's secret (text)",
    docs: "https://docs.gitea.com/usage/webhooks",
    sample: Sample {
        headers: &[
            ("X-Gitea-Delivery", "f6266f16-1bf3-46a5-9ea4-602e06ead473"),
            ("X-Gitea-Event", "push"),
        ],
        body: r#"{"ref":"refs/heads/main","before":"28e1879d029cb852e4844d9c718537df08844e03","after":"bffeb74224043ba2feb48d137756c8a9331c449a","repository":{"full_name":"hookbox/hookbox"}}"#,
    },
};

pub(crate) const HEROKU: Preset = Preset {
    name: "heroku",
    provider: "Heroku (app webhooks)",
    recipe: body_hmac(
        SHA256,
        &["Heroku-Webhook-Hmac-SHA256"],
        &[""],
        Encoding::Base64,
    ),
    tolerance_secs: None,
    event_id: Json("/id"),
    event_type: Composite(&[Json("/resource"), Json("/action")]),
    handshake: None,
    secret: "the webhook's secret (`heroku webhooks:add --secret`, or the one it generates; text)",
    docs: "https://devcenter.heroku.com/articles/app-webhooks#securing-webhook-requests",
    sample: Sample {
        headers: &[("Heroku-Webhook-Id", "2d8a5e2a-3d1c-4b8e-9e0f-1a2b3c4d5e6f")],
        body: r#"{"id":"a3f4c2d1-9b8e-4f7a-8c6d-5e4f3a2b1c0d","action":"update","actor":{"email":"someone@example.com"},"data":{"app":{"name":"hookbox"},"status":"succeeded"},"resource":"release","version":"application/vnd.heroku+json; version=3","created_at":"2023-11-14T22:13:20Z"}"#,
    },
};

/// X's Account Activity API (formerly Twitter).
pub(crate) const X_ACTIVITY: Preset = Preset {
    name: "x-activity",
    provider: "X (Account Activity API, formerly Twitter)",
    recipe: body_hmac(
        SHA256,
        &["x-twitter-webhooks-signature"],
        &["sha256="],
        Encoding::Base64,
    ),
    tolerance_secs: None,
    // Each body holds one kind of activity under its own key
    // (`tweet_create_events`, `favorite_events`…): no common id or type.
    event_id: Absent,
    event_type: Absent,
    handshake: Some(Handshake::XCrc),
    secret: "the app's consumer secret (API secret key; text)",
    docs: "https://docs.x.com/x-api/webhooks/introduction",
    sample: Sample {
        headers: NO_HEADERS,
        body: r#"{"for_user_id":"2244994945","favorite_events":[{"id":"a7ba59eab0bfcba386f7acedac279542","created_at":"Mon Mar 26 16:33:26 +0000 2018","timestamp_ms":1522082006140}]}"#,
    },
};
