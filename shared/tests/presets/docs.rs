//! The generated docs: the presets table of `docs/signatures.md` and the
//! whole of `docs/providers.md` are the registry's text (a stale one
//! fails; `HOOKBOX_UPDATE_DOCS=1 cargo test -p hookbox --test presets`
//! rewrites them), and each provider section's configuration parses.

use std::path::Path;

use hookbox::signature::presets;

use super::all_vectors;

#[test]
fn the_docs_table_is_generated_from_the_registry() {
    const BEGIN: &str =
        "<!-- presets table: generated from the registry by shared/tests/presets.rs -->\n";
    const END: &str = "<!-- end of presets table -->\n";
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/signatures.md");
    let text = std::fs::read_to_string(&path).expect("docs/signatures.md");
    let start = text.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = start + text[start..].find(END).expect("end marker");
    let expected = presets::markdown_table();
    if std::env::var_os("HOOKBOX_UPDATE_DOCS").is_some() {
        let updated = format!("{}{expected}{}", &text[..start], &text[end..]);
        std::fs::write(&path, updated).expect("write docs/signatures.md");
        return;
    }
    assert!(
        text[start..end] == expected,
        "docs/signatures.md: the presets table is stale; run \
         HOOKBOX_UPDATE_DOCS=1 cargo test -p hookbox --test presets"
    );
    for preset in presets::all() {
        assert!(expected.contains(&format!("| `{}` |", preset.name)));
    }
}

#[test]
fn the_providers_page_is_generated_from_the_registry() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/providers.md");
    let expected = presets::providers_page();
    if std::env::var_os("HOOKBOX_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).expect("write docs/providers.md");
    }
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        text == expected,
        "docs/providers.md is stale; run HOOKBOX_UPDATE_DOCS=1 cargo test -p hookbox --test presets"
    );
    // each section's configuration is one hookbox takes, with the secret
    // of one of the preset's vectors in place of "<secret>"
    let mut sections = text.split("\n## ").skip(1);
    for preset in presets::all() {
        let section = sections.next().unwrap_or_default();
        assert!(
            section.contains(&format!("(`{}`)\n", preset.name)),
            "{}",
            preset.name
        );
        assert!(section.contains(preset.docs), "{}", preset.name);
        let snippet = section
            .split("```json\n")
            .nth(1)
            .and_then(|s| s.split("\n```").next())
            .unwrap_or_else(|| panic!("{}: no configuration", preset.name));
        let vector = all_vectors()
            .find(|v| v.preset == preset.name)
            .unwrap_or_else(|| panic!("{}: no vector", preset.name));
        let secret = serde_json::to_string(vector.secrets[vector.matching]).expect("json");
        let config = snippet.replace("\"<secret>\"", &secret);
        let parsed = hookbox::config::HookboxConfig::parse(&config, "docs/providers.md")
            .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
        assert!(parsed.partner(preset.name).is_some(), "{}", preset.name);
    }
}
