//! The operator page: three files built in (`shared/admin/`), served under
//! the portal's strict Content-Security-Policy, never framed.

use bytes::Bytes;

use super::super::ApiResponse;
use super::super::portal::assets::file;

/// The page.
pub const INDEX_HTML: &str = include_str!("../../../admin/index.html");
/// Its script.
pub const ADMIN_JS: &str = include_str!("../../../admin/admin.js");
/// Its style.
pub const ADMIN_CSS: &str = include_str!("../../../admin/admin.css");

/// The answer to `method` on `rest` (the path after `/admin`).
pub fn serve(method: &str, rest: &str) -> ApiResponse {
    if method != "GET" && method != "HEAD" {
        return ApiResponse::json(
            405,
            &serde_json::json!({"error": "the operator page is read with GET"}),
        );
    }
    match rest {
        // relative: `/Prod/admin` goes to `/Prod/admin/`
        "" => ApiResponse {
            status: 308,
            headers: vec![("location".to_string(), "admin/".to_string())],
            body: Bytes::new(),
        },
        "/" | "/index.html" => file("text/html; charset=utf-8", INDEX_HTML, None),
        "/admin.js" => file("text/javascript; charset=utf-8", ADMIN_JS, None),
        "/admin.css" => file("text/css; charset=utf-8", ADMIN_CSS, None),
        _ => ApiResponse::json(
            404,
            &serde_json::json!({"error": "the operator page has no such file"}),
        ),
    }
}
