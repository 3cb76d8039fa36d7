//! The blob store port: the same test bodies run through every adapter (S3
//! against moto, the filesystem in a temporary directory, the in-memory
//! fake), then what only one adapter has: S3's refusals and outages and its
//! addressing, the filesystem's root, the fake's hooks. Key validation is
//! pure code and tested on its own.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hookbox::blob::fs::FsBlobStore;
use hookbox::blob::memory::MemoryBlobStore;
use hookbox::blob::s3::S3BlobStore;
use hookbox::blob::{
    BlobError, BlobKey, BlobRef, BlobStore, INBOX_PREFIX, OUTBOX_PREFIX, get_verified, put_content,
};
use sha2::{Digest, Sha256};

/// Which adapter a test runs through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adapter {
    /// aws-sdk-s3 against a fresh bucket of the shared moto server.
    S3,
    /// A directory under a fresh temporary directory.
    Fs,
    /// The in-memory fake.
    Memory,
}

/// Runs each named `async fn(Adapter)` as three tests: `s3::name`,
/// `fs::name` and `memory::name`.
macro_rules! for_each_blob_adapter {
    ($($name:ident),* $(,)?) => {
        mod s3 {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Adapter::S3).await
                }
            )*
        }
        mod fs {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Adapter::Fs).await
                }
            )*
        }
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Adapter::Memory).await
                }
            )*
        }
    };
}

for_each_blob_adapter!(
    bodies_of_0_bytes_1_byte_and_4_mib_round_trip_byte_exact,
    the_same_content_stored_twice_is_one_object,
    a_missing_key_is_not_found_and_not_retryable,
    a_corrupted_object_fails_verification_naming_the_key_and_both_hashes,
    a_size_mismatch_is_corrupt,
    an_owner_that_is_not_one_segment_is_refused_before_the_store,
    a_delete_removes_only_its_object_and_an_absent_key_is_a_success,
);

/// A store and a way behind its back (to count and to damage objects).
struct Fixture {
    store: Arc<dyn BlobStore>,
    backend: Backend,
}

enum Backend {
    S3 {
        client: aws_sdk_s3::Client,
        bucket: String,
    },
    Fs {
        _dir: tempfile::TempDir,
        store: FsBlobStore,
    },
    Memory(MemoryBlobStore),
}

impl Fixture {
    async fn new(adapter: Adapter) -> Fixture {
        match adapter {
            Adapter::S3 => {
                let (client, bucket) = hookbox_testkit::s3::bucket().await;
                Fixture {
                    store: Arc::new(S3BlobStore::new(client.clone(), bucket.clone())),
                    backend: Backend::S3 { client, bucket },
                }
            }
            Adapter::Fs => {
                let dir = tempfile::tempdir().expect("temporary directory");
                // Not created yet: the first put creates it.
                let store = FsBlobStore::new(dir.path().join("blobs"));
                Fixture {
                    store: Arc::new(store.clone()),
                    backend: Backend::Fs { _dir: dir, store },
                }
            }
            Adapter::Memory => {
                let store = MemoryBlobStore::new();
                Fixture {
                    store: Arc::new(store.clone()),
                    backend: Backend::Memory(store),
                }
            }
        }
    }

    fn store(&self) -> &dyn BlobStore {
        self.store.as_ref()
    }

    /// The keys of the stored objects, sorted, as the backend sees them.
    async fn stored_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = match &self.backend {
            Backend::S3 { client, bucket } => client
                .list_objects_v2()
                .bucket(bucket)
                .send()
                .await
                .expect("list the bucket")
                .contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_string))
                .collect(),
            Backend::Fs { store, .. } => files_under(store.root())
                .iter()
                .map(|p| {
                    p.strip_prefix(store.root())
                        .expect("under the root")
                        .to_string_lossy()
                        .into_owned()
                })
                .collect(),
            Backend::Memory(store) => store.keys().iter().map(|k| k.to_string()).collect(),
        };
        keys.sort();
        keys
    }

    /// Replaces the object under `key` behind the adapter's back.
    async fn overwrite(&self, key: &BlobKey, bytes: Vec<u8>) {
        match &self.backend {
            Backend::S3 { client, bucket } => {
                client
                    .put_object()
                    .bucket(bucket)
                    .key(key.as_str())
                    .body(bytes.into())
                    .send()
                    .await
                    .expect("overwrite in the bucket");
            }
            Backend::Fs { store, .. } => {
                std::fs::write(store.path_of(key), bytes).expect("overwrite the file");
            }
            Backend::Memory(store) => {
                assert!(store.remove(key), "{key} was stored");
                store.put(key, Bytes::from(bytes)).await.expect("put");
            }
        }
    }
}

/// Every regular file under `dir` (none when it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `len` bytes that are not a repeating pattern (xorshift), so an offset or
/// truncation error cannot go unnoticed.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// `expect_err` for reads, without printing megabytes of body when the read
/// unexpectedly succeeds.
trait FailsWith {
    fn fails(self, what: &str) -> BlobError;
}

impl FailsWith for Result<Bytes, BlobError> {
    fn fails(self, what: &str) -> BlobError {
        match self {
            Ok(bytes) => panic!("{what}: expected an error, read {} bytes", bytes.len()),
            Err(e) => e,
        }
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn hex64(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

async fn bodies_of_0_bytes_1_byte_and_4_mib_round_trip_byte_exact(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    for body in [Vec::new(), vec![0xA5], noise(4 * 1024 * 1024, 7)] {
        let blob = put_content(fx.store(), INBOX_PREFIX, "demo", Bytes::from(body.clone()))
            .await
            .expect("put");
        assert_eq!(
            blob.key.as_str(),
            format!("inbox/demo/{}", hex64(&body)),
            "content-addressed key"
        );
        assert_eq!(blob.size, body.len() as u64);
        assert_eq!(blob.sha256, sha256(&body));
        assert_eq!(blob.sha256_hex(), hex64(&body));

        let verified = get_verified(fx.store(), &blob).await.expect("get_verified");
        assert!(
            verified[..] == body[..],
            "{} bytes back byte-exact",
            body.len()
        );
        let raw = fx.store().get(&blob.key).await.expect("get");
        assert!(raw[..] == body[..], "get returns the same bytes");
    }
    assert_eq!(fx.stored_keys().await.len(), 3);
}

async fn the_same_content_stored_twice_is_one_object(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    let body = Bytes::from_static(b"{\"id\":\"evt_1\",\"big\":true}");
    let first = put_content(fx.store(), INBOX_PREFIX, "demo", body.clone())
        .await
        .expect("first put");
    let second = put_content(fx.store(), INBOX_PREFIX, "demo", body.clone())
        .await
        .expect("second put of the same content");
    assert_eq!(first, second, "same reference");
    assert_eq!(fx.stored_keys().await, vec![first.key.to_string()]);
    assert_eq!(
        get_verified(fx.store(), &second).await.expect("get"),
        body,
        "still readable"
    );

    // Another owner or other bytes are other objects.
    let other_owner = put_content(fx.store(), OUTBOX_PREFIX, "erp", body.clone())
        .await
        .expect("put for a destination");
    let other_bytes = put_content(fx.store(), INBOX_PREFIX, "demo", Bytes::from_static(b"{}"))
        .await
        .expect("put other bytes");
    let mut expected = vec![
        first.key.to_string(),
        other_owner.key.to_string(),
        other_bytes.key.to_string(),
    ];
    expected.sort();
    assert_eq!(fx.stored_keys().await, expected);
}

async fn a_missing_key_is_not_found_and_not_retryable(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    let key = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"never stored")).expect("key");
    // On an empty store (for the filesystem: before its root exists) ...
    let e = fx.store().get(&key).await.fails("nothing stored");
    assert_eq!(
        e,
        BlobError::NotFound {
            key: key.to_string()
        }
    );
    assert!(!e.is_retryable());
    assert!(e.to_string().contains(key.as_str()), "{e}");

    // ... and next to other objects.
    put_content(fx.store(), INBOX_PREFIX, "demo", Bytes::from_static(b"x"))
        .await
        .expect("put");
    let e = fx.store().get(&key).await.fails("still not stored");
    assert!(matches!(e, BlobError::NotFound { .. }), "{e:?}");
    let missing = BlobRef {
        key: key.clone(),
        size: 12,
        sha256: sha256(b"never stored"),
    };
    let e = get_verified(fx.store(), &missing)
        .await
        .fails("nothing stored");
    assert!(matches!(e, BlobError::NotFound { .. }), "{e:?}");
}

async fn a_corrupted_object_fails_verification_naming_the_key_and_both_hashes(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    let body = noise(40_000, 3);
    let blob = put_content(fx.store(), INBOX_PREFIX, "demo", Bytes::from(body.clone()))
        .await
        .expect("put");
    let mut damaged = body.clone();
    damaged[20_000] ^= 0x01;
    fx.overwrite(&blob.key, damaged.clone()).await;

    // get hands back what is stored; only get_verified checks it.
    let raw = fx.store().get(&blob.key).await.expect("get");
    assert!(raw[..] == damaged[..]);

    let e = get_verified(fx.store(), &blob)
        .await
        .fails("one bit flipped");
    assert_eq!(
        e,
        BlobError::Corrupt {
            key: blob.key.to_string(),
            expected_sha256: hex64(&body),
            actual_sha256: hex64(&damaged),
            expected_size: 40_000,
            actual_size: 40_000,
        }
    );
    assert!(!e.is_retryable());
    let text = e.to_string();
    for part in [blob.key.as_str(), &hex64(&body), &hex64(&damaged)] {
        assert!(text.contains(part), "{text:?} names {part}");
    }
}

async fn a_size_mismatch_is_corrupt(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    let body = noise(50_000, 5);
    let blob = put_content(fx.store(), INBOX_PREFIX, "demo", Bytes::from(body.clone()))
        .await
        .expect("put");

    // A reference whose size is wrong, over intact bytes.
    let wrong_size = BlobRef {
        size: 50_001,
        ..blob.clone()
    };
    let e = get_verified(fx.store(), &wrong_size)
        .await
        .fails("size differs");
    assert!(
        matches!(
            &e,
            BlobError::Corrupt { key, expected_size: 50_001, actual_size: 50_000, .. }
                if key == blob.key.as_str()
        ),
        "{e:?}"
    );

    // A truncated object under the right reference.
    fx.overwrite(&blob.key, body[..49_999].to_vec()).await;
    let e = get_verified(fx.store(), &blob)
        .await
        .fails("object truncated");
    assert!(
        matches!(
            &e,
            BlobError::Corrupt { expected_size: 50_000, actual_size: 49_999, actual_sha256, .. }
                if *actual_sha256 == hex64(&body[..49_999])
        ),
        "{e:?}"
    );
    assert!(!e.is_retryable());
}

async fn an_owner_that_is_not_one_segment_is_refused_before_the_store(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    for owner in ["a/b", "..", "", "de mo", "../../etc"] {
        let e = put_content(fx.store(), INBOX_PREFIX, owner, Bytes::from_static(b"x"))
            .await
            .expect_err(owner);
        assert!(
            matches!(&e, BlobError::Refused { operation: "key", key, .. } if key.contains(owner)),
            "{owner:?}: {e:?}"
        );
        assert!(!e.is_retryable());
    }
    assert!(fx.stored_keys().await.is_empty(), "nothing was written");
    if let Backend::Memory(store) = &fx.backend {
        assert_eq!(store.puts(), 0, "the store was never called");
    }
}

async fn a_delete_removes_only_its_object_and_an_absent_key_is_a_success(adapter: Adapter) {
    let fx = Fixture::new(adapter).await;
    let never = BlobKey::content(OUTBOX_PREFIX, "erp", &sha256(b"never stored")).expect("key");
    // on an empty store (for the filesystem: before its root exists)
    fx.store()
        .delete(&never)
        .await
        .expect("deleting an absent key succeeds");
    let gone = put_content(
        fx.store(),
        OUTBOX_PREFIX,
        "erp",
        Bytes::from(noise(70_000, 11)),
    )
    .await
    .expect("put");
    let kept = put_content(
        fx.store(),
        OUTBOX_PREFIX,
        "erp",
        Bytes::from_static(b"{\"kept\":1}"),
    )
    .await
    .expect("put");
    fx.store().delete(&gone.key).await.expect("delete");
    assert_eq!(fx.stored_keys().await, vec![kept.key.to_string()]);
    let e = get_verified(fx.store(), &gone).await.fails("deleted");
    assert!(matches!(e, BlobError::NotFound { .. }), "{e:?}");
    assert_eq!(
        get_verified(fx.store(), &kept)
            .await
            .expect("the other object"),
        Bytes::from_static(b"{\"kept\":1}")
    );
    // again, and an absent key next to other objects: still a success
    fx.store().delete(&gone.key).await.expect("delete again");
    fx.store().delete(&never).await.expect("absent");
    // and the key can be stored again
    put_content(
        fx.store(),
        OUTBOX_PREFIX,
        "erp",
        Bytes::from(noise(70_000, 11)),
    )
    .await
    .expect("put again");
    get_verified(fx.store(), &gone).await.expect("back");
}

// ---- keys -----------------------------------------------------------------

#[test]
fn keys_are_validated_so_no_filesystem_or_s3_can_misread_them() {
    let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    for good in [
        format!("inbox/demo/{hex}"),
        format!("outbox/erp-eu_1.v2/{hex}"),
        "a".to_string(),
        "a/b.c/.hidden/d..e".to_string(),
        format!("inbox/{}", "p".repeat(255)),
    ] {
        let key = BlobKey::parse(&good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
        assert_eq!(key.as_str(), good);
        assert_eq!(key.to_string(), good);
    }
    let digest: [u8; 32] = hex::decode(hex).expect("hex").try_into().expect("32 bytes");
    assert_eq!(
        BlobKey::content("inbox", "demo", &digest).expect("content key"),
        BlobKey::parse(&format!("inbox/demo/{hex}")).expect("parsed key")
    );

    let six_hundred = format!("inbox/{}", vec!["a".repeat(99); 6].join("/"));
    assert!(six_hundred.len() > 600, "{}", six_hundred.len());
    let refused: &[(&str, &str)] = &[
        ("", "empty"),
        ("../x", "'..'"),
        ("inbox/../x", "'..'"),
        ("inbox/..", "'..'"),
        ("inbox/./x", "'.'"),
        ("./x", "'.'"),
        ("inbox//x", "empty segment"),
        ("inbox/x/", "empty segment"),
        ("/abs", "absolute"),
        ("inbox/de mo/x", "outside"),
        ("inbox/dé/x", "outside"),
        ("inbox/✓/x", "outside"),
        ("inbox\\..\\x", "outside"),
        ("inbox/x\ny", "outside"),
        ("inbox/c:x", "outside"),
        ("inbox/x%2F..", "outside"),
        (&six_hundred, "over 512 bytes"),
    ];
    for (bad, why) in refused {
        let e = BlobKey::parse(bad).expect_err(bad);
        assert_eq!(e.key, *bad, "the error keeps the key");
        assert!(
            e.reason.contains(why),
            "{bad:?}: {:?} says {why:?}",
            e.reason
        );
        let text = e.to_string();
        let shown: String = format!("{bad:?}").chars().take(60).collect();
        assert!(
            text.contains(shown.trim_end_matches('"')),
            "{text:?} names {bad:?}"
        );
        let port_error = BlobError::from(e);
        assert!(
            matches!(&port_error, BlobError::Refused { operation: "key", key, .. } if key == bad),
            "{port_error:?}"
        );
        assert!(!port_error.is_retryable());
    }
    let long_segment = format!("inbox/{}", "p".repeat(256));
    assert!(
        BlobKey::parse(&long_segment)
            .expect_err("segment over NAME_MAX")
            .reason
            .contains("255")
    );
    let e = BlobKey::parse(&six_hundred).expect_err("long");
    assert!(
        e.to_string()
            .contains(&format!("({} bytes)", six_hundred.len())),
        "a long key is cut in the text: {e}"
    );

    for (prefix, owner) in [
        ("inbox", "a/b"),
        ("in/box", "demo"),
        ("inbox", ""),
        ("", "demo"),
    ] {
        let e = BlobKey::content(prefix, owner, &digest).expect_err(owner);
        assert!(e.key.contains(hex), "{e}");
    }
}

proptest::proptest! {
    /// Whatever text parses as a key becomes a path of plain names only: no
    /// `..`, no `.`, no root, no prefix; so `root.join(key)` stays in root.
    #[test]
    fn a_parsed_key_is_always_a_relative_path_of_plain_names(
        text in "[a./\\\\ é-]{0,12}",
    ) {
        if let Ok(key) = BlobKey::parse(&text) {
            let root = Path::new("/srv/blobs");
            let path = FsBlobStore::new(root.to_path_buf()).path_of(&key);
            let rest = path.strip_prefix(root).expect("under the root");
            proptest::prop_assert!(
                rest.components().all(|c| matches!(c, Component::Normal(_))),
                "{text:?} -> {}", path.display()
            );
            proptest::prop_assert_eq!(rest.components().count(), key.segments().count());
        }
    }
}

// ---- filesystem only --------------------------------------------------------

#[tokio::test]
async fn fs_keys_cannot_leave_the_root() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("root");
    let store = FsBlobStore::new(root.clone());
    for escape in [
        "../escape",
        "inbox/../../escape",
        "inbox/demo/../../../escape",
        "/tmp/escape",
        "inbox/..",
        "..",
    ] {
        assert!(BlobKey::parse(escape).is_err(), "{escape:?} is refused");
    }
    for owner in ["..", "../..", "../../escape"] {
        assert!(
            put_content(&store, INBOX_PREFIX, owner, Bytes::from_static(b"x"))
                .await
                .is_err(),
            "{owner:?}"
        );
    }
    let blob = put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"inside"))
        .await
        .expect("put");
    let files = files_under(dir.path());
    assert_eq!(
        files,
        vec![root.join("inbox").join("demo").join(blob.sha256_hex())],
        "the one file is root/<key>, nothing beside the root"
    );
}

#[tokio::test]
async fn fs_a_second_put_writes_nothing_and_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store = FsBlobStore::new(dir.path().to_path_buf());
    let blob = put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"first"))
        .await
        .expect("put");
    let path = store.path_of(&blob.key);
    std::fs::write(&path, b"marker").expect("mark the file");
    put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"first"))
        .await
        .expect("second put is a success");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b"marker",
        "the existing file was not rewritten"
    );
    assert_eq!(
        files_under(dir.path()),
        vec![path],
        "no temporary files left"
    );
}

#[tokio::test]
async fn fs_a_root_that_is_a_file_is_refused_on_put_and_not_found_on_get_or_delete() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path().join("not-a-dir");
    std::fs::write(&root, b"").expect("a file");
    let store = FsBlobStore::new(root);
    let e = put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"x"))
        .await
        .expect_err("cannot create directories under a file");
    assert!(
        matches!(
            e,
            BlobError::Refused {
                operation: "put",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    let key = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"x")).expect("key");
    let e = store.get(&key).await.fails("no object");
    assert!(matches!(e, BlobError::NotFound { .. }), "{e:?}");
    store
        .delete(&key)
        .await
        .expect("no object under a key that runs through a file: nothing to delete");
}

// ---- in-memory fake only ------------------------------------------------------

#[tokio::test]
async fn memory_hooks_count_calls_damage_objects_and_inject_failures() {
    let store = MemoryBlobStore::new();
    assert!(store.is_empty());
    let blob = put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"hello"))
        .await
        .expect("put");
    put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"hello"))
        .await
        .expect("put again");
    assert_eq!((store.len(), store.puts(), store.gets()), (1, 2, 0));
    assert!(store.contains(&blob.key));

    // fail_next: exactly one call fails, with that error, and stores nothing.
    let down = BlobError::Unavailable {
        operation: "get",
        key: blob.key.to_string(),
        reason: "injected".into(),
    };
    store.fail_next(down.clone());
    assert_eq!(get_verified(&store, &blob).await, Err(down));
    assert_eq!(
        get_verified(&store, &blob).await.expect("next call works"),
        "hello"
    );
    store.fail_next(BlobError::Refused {
        operation: "put",
        key: "x".into(),
        reason: "injected".into(),
    });
    let e = put_content(&store, INBOX_PREFIX, "demo", Bytes::from_static(b"other"))
        .await
        .expect_err("injected refusal");
    assert!(!e.is_retryable());
    assert_eq!(store.len(), 1, "a failed put stores nothing");

    // set_unavailable: every call fails, retryably, until switched back.
    store.set_unavailable(true);
    for _ in 0..2 {
        let e = store.get(&blob.key).await.fails("down");
        assert!(e.is_retryable(), "{e:?}");
        let e = store
            .put(&blob.key, Bytes::from_static(b"hello"))
            .await
            .expect_err("down");
        assert!(
            matches!(
                e,
                BlobError::Unavailable {
                    operation: "put",
                    ..
                }
            ),
            "{e:?}"
        );
    }
    store.set_unavailable(false);
    assert_eq!(store.get(&blob.key).await.expect("up again"), "hello");
    assert_eq!((store.puts(), store.gets()), (5, 5));

    // corrupt and remove.
    assert!(store.corrupt(&blob.key));
    let e = get_verified(&store, &blob).await.fails("corrupted");
    assert!(
        matches!(
            &e,
            BlobError::Corrupt {
                expected_size: 5,
                actual_size: 5,
                ..
            }
        ),
        "{e:?}"
    );
    let empty = put_content(&store, INBOX_PREFIX, "demo", Bytes::new())
        .await
        .expect("put empty");
    assert!(store.corrupt(&empty.key));
    let e = get_verified(&store, &empty)
        .await
        .fails("empty object grew");
    assert!(
        matches!(
            &e,
            BlobError::Corrupt {
                expected_size: 0,
                actual_size: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(store.remove(&blob.key));
    assert!(!store.remove(&blob.key), "already gone");
    let e = get_verified(&store, &blob).await.fails("removed");
    assert!(matches!(e, BlobError::NotFound { .. }), "{e:?}");
    let never = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"never")).expect("key");
    assert!(!store.corrupt(&never));
    assert_eq!(store.keys(), vec![empty.key.clone()]);

    // delete: counted, failures injected like the others
    store.fail_next(BlobError::Unavailable {
        operation: "delete",
        key: empty.key.to_string(),
        reason: "injected".into(),
    });
    let e = store.delete(&empty.key).await.expect_err("injected");
    assert!(e.is_retryable());
    assert!(
        store.contains(&empty.key),
        "a failed delete deletes nothing"
    );
    store.delete(&empty.key).await.expect("delete");
    store.delete(&never).await.expect("absent: a success");
    assert!(store.is_empty());
    assert_eq!(store.deletes(), 3);
}

// ---- S3 only ------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_bucket_that_does_not_exist_is_refused_not_retryable() {
    let client = hookbox_testkit::s3::client(&hookbox_testkit::moto::endpoint());
    let store = S3BlobStore::new(client, "hookbox-no-such-bucket");
    let key = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"x")).expect("key");
    let e = store
        .put(&key, Bytes::from_static(b"x"))
        .await
        .expect_err("no bucket");
    assert!(
        matches!(&e, BlobError::Refused { operation: "put", key: k, reason }
            if k == key.as_str() && reason.contains("NoSuchBucket")),
        "{e:?}"
    );
    assert!(!e.is_retryable());
    let e = store.get(&key).await.fails("no bucket");
    assert!(
        matches!(&e, BlobError::Refused { operation: "get", reason, .. }
            if reason.contains("NoSuchBucket")),
        "a missing bucket is not a missing object: {e:?}"
    );
    assert!(!e.is_retryable());
    let e = store.delete(&key).await.expect_err("no bucket");
    assert!(
        matches!(&e, BlobError::Refused { operation: "delete", reason, .. }
            if reason.contains("NoSuchBucket")),
        "{e:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_a_dead_endpoint_is_unavailable_and_retryable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let dead = hookbox_testkit::s3::client(&format!("http://127.0.0.1:{port}"));
    let fast = dead
        .config()
        .to_builder()
        .retry_config(
            aws_sdk_s3::config::retry::RetryConfig::standard()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .timeout_config(
            aws_sdk_s3::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_timeout(Duration::from_secs(5))
                .build(),
        )
        .build();
    let store = S3BlobStore::new(aws_sdk_s3::Client::from_conf(fast), "hookbox-blobs");
    let key = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"x")).expect("key");
    let e = store
        .put(&key, Bytes::from_static(b"x"))
        .await
        .expect_err("nobody listens");
    assert!(
        matches!(&e, BlobError::Unavailable { operation: "put", key: k, .. } if k == key.as_str()),
        "{e:?}"
    );
    assert!(e.is_retryable());
    let e = store.get(&key).await.fails("nobody listens");
    assert!(
        matches!(
            &e,
            BlobError::Unavailable {
                operation: "get",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert!(!e.to_string().contains("test"), "no credentials in {e}");
    let e = store.delete(&key).await.expect_err("nobody listens");
    assert!(
        matches!(
            &e,
            BlobError::Unavailable {
                operation: "delete",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.is_retryable());
}

fn sdk_config(endpoint: Option<&str>) -> aws_config::SdkConfig {
    use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region, SharedCredentialsProvider};
    let mut builder = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "AKIDLOCAL",
            "local",
            None,
            None,
            "test",
        )));
    if let Some(url) = endpoint {
        builder = builder.endpoint_url(url);
    }
    builder.build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_from_env_reaches_a_local_endpoint() {
    let (_, bucket) = hookbox_testkit::s3::bucket().await;
    let store = S3BlobStore::from_env(
        &sdk_config(Some(&hookbox_testkit::moto::endpoint())),
        bucket.clone(),
        |_| None,
    );
    assert_eq!(store.bucket(), bucket);
    let blob = put_content(&store, OUTBOX_PREFIX, "erp", Bytes::from(noise(100_000, 9)))
        .await
        .expect("put through from_env's client");
    assert_eq!(
        get_verified(&store, &blob).await.expect("get").len(),
        100_000
    );
}

/// Records the URI of each request and stops it before it is sent (no
/// network at all).
#[derive(Debug, Default, Clone)]
struct StopBeforeSending {
    uris: Arc<Mutex<Vec<String>>>,
}

impl aws_sdk_s3::config::Intercept for StopBeforeSending {
    fn name(&self) -> &'static str {
        "StopBeforeSending"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_s3::config::RuntimeComponents,
        _: &mut aws_sdk_s3::config::ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        self.uris
            .lock()
            .expect("lock")
            .push(context.request().uri().to_string());
        Err("stopped before sending".into())
    }
}

/// The URI `store` would send a GetObject of `key` to.
async fn request_uri(store: &S3BlobStore, key: &BlobKey) -> String {
    let recorder = StopBeforeSending::default();
    let client = aws_sdk_s3::Client::from_conf(
        store
            .client()
            .config()
            .to_builder()
            .interceptor(recorder.clone())
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
            .build(),
    );
    let probe = S3BlobStore::new(client, store.bucket());
    probe.get(key).await.fails("stopped");
    let uris = recorder.uris.lock().expect("lock").clone();
    assert_eq!(uris.len(), 1, "{uris:?}");
    // GetObject adds `?x-id=GetObject`.
    uris[0].split('?').next().unwrap_or_default().to_string()
}

#[tokio::test]
async fn s3_from_env_uses_path_style_only_when_the_endpoint_is_overridden() {
    let key = BlobKey::content(INBOX_PREFIX, "demo", &sha256(b"x")).expect("key");
    // A host name, not an IP address: S3's endpoint rules already use path
    // style for IP addresses, so only a name shows the setting.
    let local = S3BlobStore::from_env(
        &sdk_config(Some("http://localhost:4566")),
        "hookbox-blobs",
        |_| None,
    );
    assert_eq!(
        request_uri(&local, &key).await,
        format!("http://localhost:4566/hookbox-blobs/{key}")
    );

    let aws = S3BlobStore::from_env(&sdk_config(None), "hookbox-blobs", |_| None);
    assert_eq!(
        request_uri(&aws, &key).await,
        format!("https://hookbox-blobs.s3.us-east-1.amazonaws.com/{key}"),
        "virtual-hosted against AWS"
    );
}
