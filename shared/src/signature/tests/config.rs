use super::*;
use crate::signature::{Algorithm, Encoding, GenericHmacConfig, SchemeKind};

#[test]
fn json_configurations_from_the_issue_deserialize() {
    let stripe: SchemeConfig = serde_json::from_str(r#"{"scheme":"stripe"}"#).expect("valid");
    assert_eq!(
        stripe,
        SchemeConfig::Stripe {
            tolerance_secs: 300
        }
    );
    let generic: SchemeConfig = serde_json::from_str(
        r#"{"scheme":"generic-hmac","header":"X-Sig","algorithm":"sha256","encoding":"hex","prefix":"sha256="}"#,
    )
    .expect("valid");
    let mut expected = GenericHmacConfig::new("X-Sig");
    expected.prefix = Some("sha256=".into());
    assert_eq!(generic, SchemeConfig::GenericHmac(expected));
    for (json, kind) in [
        (
            r#"{"scheme":"standard-webhooks"}"#,
            SchemeKind::StandardWebhooks,
        ),
        (r#"{"scheme":"github"}"#, SchemeKind::Github),
        (r#"{"scheme":"shopify"}"#, SchemeKind::Shopify),
        (
            r#"{"scheme":"slack","tolerance_secs":60}"#,
            SchemeKind::Slack,
        ),
        (r#"{"scheme":"twilio"}"#, SchemeKind::Twilio),
    ] {
        let config: SchemeConfig = serde_json::from_str(json).expect(json);
        assert_eq!(config.kind(), kind);
    }
    let slack: SchemeConfig =
        serde_json::from_str(r#"{"scheme":"slack","tolerance_secs":60}"#).expect("valid");
    assert_eq!(slack.tolerance_secs(), Some(60));
}

#[test]
fn toml_configuration_deserializes() {
    #[derive(serde::Deserialize)]
    struct Partner {
        signature: Verifier,
        secrets: Vec<Secret>,
    }
    let partner: Partner = toml::from_str(
        r#"
        secrets = ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]

        [signature]
        scheme = "generic-hmac"
        header = "X-Signature"
        algorithm = "sha512"
        encoding = "base64"
        timestamp_header = "X-Timestamp"
        template = "{timestamp}|{body}"
        tolerance_secs = 120
        "#,
    )
    .expect("valid TOML");
    assert_eq!(partner.secrets.len(), 1);
    let SchemeConfig::GenericHmac(generic) = partner.signature.config() else {
        panic!(
            "expected generic-hmac, got {:?}",
            partner.signature.config()
        );
    };
    assert_eq!(generic.algorithm, Algorithm::Sha512);
    assert_eq!(generic.encoding, Encoding::Base64);
    assert_eq!(partner.signature.config().tolerance_secs(), Some(120));
}

#[test]
fn unknown_schemes_and_fields_are_rejected() {
    for json in [
        r#"{"scheme":"paypal"}"#,
        r#"{"tolerance_secs":300}"#,
        r#"{"scheme":"stripe","tolerence_secs":60}"#,
        r#"{"scheme":"github","secret":"x"}"#,
        r#"{"scheme":"generic-hmac","header":"X","algorithm":"md5"}"#,
        r#"{"scheme":"generic-hmac","header":"X","encoding":"base32"}"#,
        r#"{"scheme":"generic-hmac","header":"X","prefx":"sha256="}"#,
        r#"{"scheme":"generic-hmac"}"#,
    ] {
        assert!(
            serde_json::from_str::<SchemeConfig>(json).is_err(),
            "{json}"
        );
    }
}

#[test]
fn verifier_deserialization_validates_the_configuration() {
    let bad = r#"{"scheme":"generic-hmac","header":"X-Sig","template":"no body here"}"#;
    assert!(serde_json::from_str::<SchemeConfig>(bad).is_ok());
    assert!(serde_json::from_str::<Verifier>(bad).is_err());
}

#[test]
fn configurations_round_trip_through_json() {
    let mut generic = GenericHmacConfig::new("X-Sig");
    generic.timestamp_header = Some("X-Ts".into());
    for config in [
        SchemeConfig::StandardWebhooks { tolerance_secs: 5 },
        SchemeConfig::Github {},
        SchemeConfig::GenericHmac(generic),
    ] {
        let json = serde_json::to_string(&config).expect("serializes");
        let back: SchemeConfig = serde_json::from_str(&json).expect(&json);
        assert_eq!(back, config);
        let verifier = Verifier::new(config.clone()).expect("valid");
        let json = serde_json::to_string(&verifier).expect("serializes");
        let back: Verifier = serde_json::from_str(&json).expect(&json);
        assert_eq!(back, verifier);
    }
}

#[test]
fn scheme_names_parse_and_print() {
    for kind in SchemeKind::ALL {
        assert_eq!(kind.as_str().parse::<SchemeKind>(), Ok(kind));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    assert!("Stripe".parse::<SchemeKind>().is_err());
    let mut config = SchemeConfig::default_for(SchemeKind::Stripe).expect("defaults");
    config.set_tolerance_secs(1);
    assert_eq!(config.tolerance_secs(), Some(1));
    let mut github = SchemeConfig::Github {};
    github.set_tolerance_secs(1);
    assert_eq!(github.tolerance_secs(), None);
}
