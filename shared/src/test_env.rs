//! Unit tests' stand-in for the environment: the settings readers take a
//! `Fn(&str) -> Option<String>` (`std::env::var` in the functions).

use std::collections::HashMap;

/// An environment holding exactly `pairs`.
pub(crate) fn env(
    pairs: &[(&str, &str)],
) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}
