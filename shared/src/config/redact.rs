//! Parser errors without the input they quote: a configuration holds
//! secrets, and its errors reach the logs.

/// A parser's complaint with any quoted input taken out: serde's "invalid
/// type: string \"whsec_…\", expected a sequence" would put a secret in the
/// error text and the logs. Field names (`unknown field \`secret\``) and the
/// position stay.
fn without_values(message: &str) -> String {
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        // "<what> <value>, expected <shape>": keep the kind and the shape
        let kind = rest.split([' ', ',']).next().unwrap_or("value");
        let expected = rest
            .rsplit_once("expected ")
            .map_or("another type", |(_, e)| e);
        return format!("a {kind} where {expected} belongs");
    }
    // any other message: drop whatever it quotes
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        match c {
            '"' if !quoted => {
                quoted = true;
                out.push_str("\"…\"");
            }
            '"' => quoted = false,
            c if !quoted => out.push(c),
            _ => {}
        }
    }
    out
}

pub(super) fn json_syntax_detail(e: &serde_json::Error) -> String {
    let text = e.to_string();
    // serde_json appends " at line L column C"; rebuild it after cleaning
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m);
    format!(
        "{} at line {} column {}",
        without_values(message),
        e.line(),
        e.column()
    )
}

pub(super) fn toml_syntax_detail(e: &toml::de::Error, text: &str) -> String {
    // never Display: it quotes the offending source line
    let message = without_values(e.message().trim());
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{message} at line {line} column {column}")
        }
        None => message,
    }
}
