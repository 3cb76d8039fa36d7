//! The portal's page: three files built in (`shared/portal/`), served with
//! a strict Content-Security-Policy: scripts, styles and calls from the
//! page's own origin only, nothing inline, no plugins, no forms posting
//! elsewhere, and no framing unless the stack names who may frame it.

use bytes::Bytes;

use super::super::ApiResponse;

/// The page.
pub const INDEX_HTML: &str = include_str!("../../../portal/index.html");
/// Its script.
pub const PORTAL_JS: &str = include_str!("../../../portal/portal.js");
/// Its style.
pub const PORTAL_CSS: &str = include_str!("../../../portal/portal.css");

/// The policy, with `frame-ancestors` from the stack's settings
/// (`'none'` unless it names the SaaS's origins that embed the portal).
pub fn content_security_policy(frame_ancestors: Option<&str>) -> String {
    format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors {}",
        frame_ancestors.unwrap_or("'none'")
    )
}

/// A built-in file served under the policy.
pub(crate) fn file(
    content_type: &str,
    body: &'static str,
    frame_ancestors: Option<&str>,
) -> ApiResponse {
    let mut headers = vec![
        ("content-type".to_string(), content_type.to_string()),
        (
            "content-security-policy".to_string(),
            content_security_policy(frame_ancestors),
        ),
        ("x-content-type-options".to_string(), "nosniff".to_string()),
        ("referrer-policy".to_string(), "no-referrer".to_string()),
        ("cache-control".to_string(), "no-cache".to_string()),
    ];
    if frame_ancestors.is_none() {
        headers.push(("x-frame-options".to_string(), "DENY".to_string()));
    }
    ApiResponse {
        status: 200,
        headers,
        body: Bytes::from_static(body.as_bytes()),
    }
}

/// The answer to `method` on `rest` (the path after `/portal`).
pub fn serve(method: &str, rest: &str, frame_ancestors: Option<&str>) -> ApiResponse {
    if method != "GET" && method != "HEAD" {
        return ApiResponse::json(
            405,
            &serde_json::json!({"code": "method_not_allowed",
                                "detail": "the portal's page is read with GET"}),
        );
    }
    match rest {
        // relative: `/Prod/portal` goes to `/Prod/portal/`
        "" => ApiResponse {
            status: 308,
            headers: vec![("location".to_string(), "portal/".to_string())],
            body: Bytes::new(),
        },
        "/" | "/index.html" => file("text/html; charset=utf-8", INDEX_HTML, frame_ancestors),
        "/portal.js" => file("text/javascript; charset=utf-8", PORTAL_JS, frame_ancestors),
        "/portal.css" => file("text/css; charset=utf-8", PORTAL_CSS, frame_ancestors),
        _ => ApiResponse::json(
            404,
            &serde_json::json!({"code": "not_found", "detail": "the portal has no such file"}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_served_under_a_strict_policy_and_loads_nothing_inline() {
        let page = serve("GET", "/", None);
        assert_eq!(page.status, 200);
        let csp = page
            .headers
            .iter()
            .find(|(n, _)| n == "content-security-policy")
            .map(|(_, v)| v.clone())
            .expect("a policy");
        assert!(
            csp.starts_with("default-src 'none'; script-src 'self';"),
            "{csp}"
        );
        assert!(csp.ends_with("frame-ancestors 'none'"), "{csp}");
        assert!(!csp.contains("unsafe"), "{csp}");
        let html = String::from_utf8_lossy(&page.body).to_lowercase();
        // every script and style is a file of the portal's own
        assert!(!html.contains("<style"), "inline style element");
        assert!(!html.contains(" style="), "inline style attribute");
        let handler = html.match_indices(" on").any(|(at, _)| {
            let name: String = html[at + 3..]
                .chars()
                .take_while(char::is_ascii_alphabetic)
                .collect();
            !name.is_empty() && html[at + 3 + name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler");
        for tag in html.split("<script").skip(1) {
            assert!(tag.trim_start().starts_with("src="), "inline script: {tag}");
        }
        assert!(
            ["src=\"http", "href=\"http", "src=\"//", "href=\"//"]
                .iter()
                .all(|a| !html.contains(a)),
            "nothing from elsewhere"
        );
        assert_eq!(serve("GET", "", None).status, 308);
        assert_eq!(serve("GET", "/portal.js", None).status, 200);
        assert_eq!(serve("GET", "/../secrets", None).status, 404);
        assert_eq!(serve("POST", "/", None).status, 405);
        let framed = serve("GET", "/", Some("https://app.example"));
        assert!(framed.headers.iter().all(|(n, _)| n != "x-frame-options"));
    }
}
