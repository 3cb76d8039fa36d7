//! The KMS adapter of the key vault against moto's KMS: data keys made and
//! opened under the stack's key, an altered or foreign one refused (not
//! retryable), and endpoint secrets sealed through it that open only for
//! their endpoint.

use std::sync::Arc;
use std::time::Duration;

use hookbox::tenants::{SecretKeeper, manage};
use hookbox::vault::KeyVault;
use hookbox::vault::kms::KmsVault;
use hookbox_testkit::moto;
use serde_json::json;

use super::common::{self, Adapter, migrated_db, sql};
use crate::for_each_adapter;

for_each_adapter!(secrets_sealed_under_kms_open_only_for_their_endpoint);

async fn key(client: &aws_sdk_kms::Client) -> String {
    client
        .create_key()
        .description("hookbox endpoint secrets (test)")
        .send()
        .await
        .expect("create key")
        .key_metadata()
        .expect("metadata")
        .key_id()
        .to_string()
}

async fn vault() -> (KmsVault, aws_sdk_kms::Client) {
    let aws = hookbox::delivery::local_aws_config(&moto::endpoint());
    let client = aws_sdk_kms::Client::new(&aws);
    let id = key(&client).await;
    (KmsVault::new(client.clone(), id), client)
}

#[tokio::test]
async fn kms_makes_and_opens_data_keys_and_refuses_altered_or_foreign_ones() {
    let (vault, client) = vault().await;
    let new = vault.generate().await.expect("GenerateDataKey");
    let back = vault.unwrap(&new.wrapped).await.expect("Decrypt");
    assert_eq!(back.expose(), new.key.expose());
    assert!(!new.wrapped.windows(8).any(|w| w == &new.key.expose()[..8]));

    let mut altered = new.wrapped.clone();
    let at = altered.len() / 2;
    altered[at] ^= 0x01;
    let err = vault.unwrap(&altered).await.expect_err("altered");
    assert!(!err.is_retryable(), "{err}");

    // wrapped under another key of the account: refused by this one
    let other = KmsVault::new(client.clone(), key(&client).await);
    let theirs = other.generate().await.expect("other key");
    assert!(vault.unwrap(&theirs.wrapped).await.is_err());
    // and without hookbox's encryption context, KMS does not open it
    let bare = client
        .decrypt()
        .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(new.wrapped.clone()))
        .send()
        .await;
    assert!(
        bare.is_err(),
        "a data key opened without its encryption context"
    );
}

async fn secrets_sealed_under_kms_open_only_for_their_endpoint(adapter: Adapter) {
    let (_t, db) = migrated_db(adapter).await;
    let db = db.as_ref();
    let (vault, _) = vault().await;
    let key_id = vault.wrapped_by().to_string();
    let keeper = SecretKeeper::new(Arc::new(vault));
    manage::create_tenant(db, &json!({"uid": "acme", "name": "Acme"}), None)
        .await
        .expect("tenant");
    let mut ids = Vec::new();
    for url in ["https://a.example", "https://b.example"] {
        ids.push(
            manage::create_endpoint(db, "acme", &json!({"url": url}), None)
                .await
                .expect("endpoint")
                .id,
        );
    }
    let now = chrono::Utc::now();
    let a = keeper
        .rotate(db, &ids[0], None, Duration::ZERO, None)
        .await
        .expect("seal a");
    let err = keeper
        .rotate(db, &ids[0], None, Duration::from_secs(8 * 86_400), None)
        .await
        .expect_err("a grace over 7 days");
    assert!(err.to_string().contains("at most 604800 seconds"), "{err}");
    let b = keeper
        .reveal(db, &ids[1], now, None)
        .await
        .expect("seal b on first need");
    assert_ne!(a.expose_secret(), b.expose_secret());
    // one data key, wrapped by the KMS key, for both
    let keys = hookbox::store::fetch_one(
        db,
        &sql("SELECT count(*) AS n, min(wrapped_by) AS by FROM hookbox_data_keys"),
        &hookbox::params! {},
    )
    .await
    .expect("keys");
    assert_eq!(keys.i64("n").expect("n"), 1);
    assert_eq!(keys.text("by").expect("by"), key_id);

    // a fresh keeper (another process) opens them through KMS
    let again = SecretKeeper::new(Arc::new(KmsVault::new(
        aws_sdk_kms::Client::new(&hookbox::delivery::local_aws_config(&moto::endpoint())),
        key_id.clone(),
    )));
    assert_eq!(
        again
            .reveal(db, &ids[0], now, None)
            .await
            .expect("reveal")
            .expose_secret(),
        a.expose_secret()
    );

    // b's sealed secret moved onto a: refused, naming a, never a value
    db.execute(
        &sql("UPDATE hookbox_endpoint_secrets SET sealed = (SELECT sealed FROM hookbox_endpoint_secrets WHERE endpoint_id = :b)
               WHERE endpoint_id = :a"),
        &hookbox::params! { "a" => ids[0].as_str(), "b" => ids[1].as_str() },
    )
    .await
    .expect("swap");
    let err = again
        .reveal(db, &ids[0], now, None)
        .await
        .expect_err("swapped");
    let text = err.to_string();
    assert!(
        text.contains(&ids[0]) && text.contains("does not open"),
        "{text}"
    );
    for secret in [&a, &b] {
        assert!(!text.contains(secret.expose_secret().trim_start_matches("whsec_")));
    }
}
