//! S3 for tests: the shared moto server ([`crate::moto::endpoint`]) serves
//! S3 on the same port as SQS. Each test gets a bucket of its own.

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};

/// An S3 client for the emulator at `endpoint`: dummy credentials,
/// us-east-1, path-style addressing (`http://127.0.0.1:PORT/bucket/key`;
/// virtual-hosted names like `bucket.127.0.0.1` do not resolve).
pub fn client(endpoint: &str) -> Client {
    Client::from_conf(
        aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .force_path_style(true)
            .build(),
    )
}

/// A new, empty bucket with a name unique in this process and across runs,
/// in the shared moto server, and a client for it.
///
/// # Panics
/// When moto is not installed, does not come up, or refuses the bucket.
pub async fn bucket() -> (Client, String) {
    let client = client(&crate::moto::endpoint());
    let name = crate::moto::unique_name("hookbox-blobs");
    client
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("moto refused to create bucket {name}: {e:?}"));
    (client, name)
}
