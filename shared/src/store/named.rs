//! A small SQL lexer for what we need and nothing more: find `:name`
//! parameters and top-level `;` outside strings, quoted identifiers, dollar
//! quotes and comments, so that `::` casts, `'a:b'` literals and `$$ … ; … $$`
//! bodies are left alone.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::{DbError, Params, Statement};

/// Why an SQL text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// A quote, identifier, dollar quote or block comment never ends.
    #[error("unterminated {what} starting at byte {at}")]
    Unterminated {
        /// What kind of token.
        what: &'static str,
        /// Byte offset where it starts.
        at: usize,
    },
    /// `$1`-style placeholders are not portable across adapters.
    #[error("positional placeholder at byte {at}: write :name parameters instead")]
    Positional {
        /// Byte offset.
        at: usize,
    },
}

/// SQL text rewritten from `:name` to `$n` for PostgreSQL, with the names in
/// `$n` order (a name used twice maps to one `$n`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSql {
    /// The rewritten text.
    pub sql: String,
    /// `names[i]` is bound to `$(i+1)`.
    pub names: Vec<String>,
}

impl fmt::Display for NamedSql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql)
    }
}

enum Token {
    /// `:name` at `start..end` (the colon included).
    Param { start: usize, end: usize },
    /// A top-level `;` at this offset.
    Semicolon(usize),
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Walks `sql`, reporting parameters and top-level semicolons.
fn scan(sql: &str, mut on: impl FnMut(Token)) -> Result<(), ParseError> {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                // E'…' strings allow backslash escapes; plain ones only ''.
                let backslash = i > 0 && matches!(b[i - 1], b'e' | b'E') && {
                    // `e` must start a token, not end an identifier like `type'`.
                    i < 2 || !is_ident_char(b[i - 2])
                };
                i = skip_quoted(b, i, b'\'', backslash, "string literal")?;
            }
            b'"' => i = skip_quoted(b, i, b'"', false, "quoted identifier")?,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_block_comment(b, i)?,
            b'$' => {
                if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    // `$1` — unless it is part of an identifier like `a$1`.
                    if i == 0 || !is_ident_char(b[i - 1]) {
                        return Err(ParseError::Positional { at: i });
                    }
                    i += 1;
                } else if let Some(end) = dollar_tag(b, i) {
                    // Not a dollar quote when `$` continues an identifier.
                    if i > 0 && is_ident_char(b[i - 1]) {
                        i += 1;
                    } else {
                        i = skip_dollar_quoted(b, i, end)?;
                    }
                } else {
                    i += 1;
                }
            }
            b':' => {
                if b.get(i + 1) == Some(&b':') {
                    i += 2; // a `::` cast
                } else if b.get(i + 1).copied().is_some_and(is_ident_start)
                    && (i == 0 || b[i - 1] != b':')
                {
                    let start = i;
                    i += 1;
                    while i < b.len() && is_ident_char(b[i]) {
                        i += 1;
                    }
                    on(Token::Param { start, end: i });
                } else {
                    i += 1;
                }
            }
            b';' => {
                on(Token::Semicolon(i));
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Skips a quoted token starting at `start` (the opening quote); returns the
/// offset just after the closing quote. A doubled quote is an escaped quote.
fn skip_quoted(
    b: &[u8],
    start: usize,
    quote: u8,
    backslash: bool,
    what: &'static str,
) -> Result<usize, ParseError> {
    let mut i = start + 1;
    while i < b.len() {
        if backslash && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == quote {
            if b.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return Ok(i + 1);
        }
        i += 1;
    }
    Err(ParseError::Unterminated { what, at: start })
}

/// Block comments nest in PostgreSQL.
fn skip_block_comment(b: &[u8], start: usize) -> Result<usize, ParseError> {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += 1;
        }
    }
    Err(ParseError::Unterminated {
        what: "block comment",
        at: start,
    })
}

/// If a dollar-quote tag (`$$` or `$tag$`) starts at `start`, returns the
/// offset just after it.
fn dollar_tag(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    if b.get(i).copied().is_some_and(is_ident_start) {
        while i < b.len() && is_ident_char(b[i]) {
            i += 1;
        }
    }
    (b.get(i) == Some(&b'$')).then_some(i + 1)
}

fn skip_dollar_quoted(b: &[u8], start: usize, tag_end: usize) -> Result<usize, ParseError> {
    let tag = &b[start..tag_end];
    let mut i = tag_end;
    while i + tag.len() <= b.len() {
        if &b[i..i + tag.len()] == tag {
            return Ok(i + tag.len());
        }
        i += 1;
    }
    Err(ParseError::Unterminated {
        what: "dollar-quoted string",
        at: start,
    })
}

impl NamedSql {
    /// Rewrites `:name` parameters to `$n`.
    pub fn parse(sql: &str) -> Result<NamedSql, ParseError> {
        let mut params = Vec::new();
        scan(sql, |t| {
            if let Token::Param { start, end } = t {
                params.push((start, end));
            }
        })?;
        let mut out = String::with_capacity(sql.len());
        let mut names: Vec<String> = Vec::new();
        let mut last = 0;
        for (start, end) in params {
            out.push_str(&sql[last..start]);
            let name = &sql[start + 1..end];
            let n = match names.iter().position(|x| x == name) {
                Some(i) => i + 1,
                None => {
                    names.push(name.to_string());
                    names.len()
                }
            };
            out.push('$');
            out.push_str(&n.to_string());
            last = end;
        }
        out.push_str(&sql[last..]);
        Ok(NamedSql { sql: out, names })
    }
}

/// Parsed statement texts, keyed by the text: each text is parsed once per
/// adapter instance.
#[derive(Debug, Default)]
pub(crate) struct StatementCache {
    parsed: Mutex<HashMap<&'static str, Arc<NamedSql>>>,
}

impl StatementCache {
    /// The parsed form of `statement`, parsing it on first use.
    pub(crate) fn get(&self, statement: &Statement) -> Result<Arc<NamedSql>, DbError> {
        let mut cache = self
            .parsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(hit) = cache.get(statement.sql) {
            return Ok(hit.clone());
        }
        let parsed = Arc::new(
            NamedSql::parse(statement.sql).map_err(|e| DbError::Statement {
                statement: statement.name,
                message: e.to_string(),
            })?,
        );
        cache.insert(statement.sql, parsed.clone());
        Ok(parsed)
    }

    /// Number of distinct texts parsed so far.
    pub(crate) fn len(&self) -> usize {
        self.parsed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }
}

impl NamedSql {
    /// Checks that `params` binds exactly the names the statement uses: a
    /// missing value and an unused one (almost always a typo) are both errors,
    /// on every adapter alike.
    pub(crate) fn check(&self, statement: &Statement, params: &Params) -> Result<(), DbError> {
        if let Some(missing) = self.names.iter().find(|n| params.get(n).is_none()) {
            return Err(DbError::Statement {
                statement: statement.name,
                message: format!("no value for parameter :{missing}"),
            });
        }
        if let Some((extra, _)) = params
            .iter()
            .find(|(n, _)| !self.names.iter().any(|x| x == n))
        {
            return Err(DbError::Statement {
                statement: statement.name,
                message: format!("parameter :{extra} is not used by the statement"),
            });
        }
        Ok(())
    }
}

/// Splits a script (a migration file) into its statements at top-level `;`,
/// dropping empty and comment-only pieces.
pub fn split_statements(sql: &str) -> Result<Vec<&str>, ParseError> {
    let mut cuts = Vec::new();
    scan(sql, |t| {
        if let Token::Semicolon(at) = t {
            cuts.push(at);
        }
    })?;
    let mut out = Vec::new();
    let mut last = 0;
    for cut in cuts.into_iter().chain(std::iter::once(sql.len())) {
        let piece = sql[last..cut].trim();
        if has_code(piece) {
            out.push(piece);
        }
        last = cut + 1;
    }
    Ok(out)
}

/// True when `piece` holds something other than whitespace and comments.
fn has_code(piece: &str) -> bool {
    let b = piece.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_whitespace() => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match skip_block_comment(b, i) {
                Ok(end) => i = end,
                Err(_) => return true,
            },
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_names_in_order_and_reuses_numbers() {
        let n = NamedSql::parse("SELECT :a, :b_2, :a WHERE x = :b_2").expect("parse");
        assert_eq!(n.sql, "SELECT $1, $2, $1 WHERE x = $2");
        assert_eq!(n.names, vec!["a", "b_2"]);
    }

    #[test]
    fn leaves_casts_strings_identifiers_comments_and_dollar_quotes_alone() {
        let sql = "SELECT x::text, ':no', E'\\':no', \"a:no\", $$ :no $$, $t$ :no; $t$ \
                   -- :no\n /* :no /* nested :no */ */ :yes, a$b, CAST(:at AS timestamptz)";
        let n = NamedSql::parse(sql).expect("parse");
        assert_eq!(n.names, vec!["yes", "at"]);
        assert!(n.sql.contains("x::text"));
        assert!(
            n.sql.contains("$1, a$b, CAST($2 AS timestamptz)"),
            "{}",
            n.sql
        );
    }

    #[test]
    fn refuses_positional_placeholders_and_unterminated_tokens() {
        assert_eq!(
            NamedSql::parse("SELECT $1"),
            Err(ParseError::Positional { at: 7 })
        );
        assert!(matches!(
            NamedSql::parse("SELECT 'abc"),
            Err(ParseError::Unterminated {
                what: "string literal",
                at: 7
            })
        ));
        assert!(matches!(
            NamedSql::parse("SELECT $$abc"),
            Err(ParseError::Unterminated {
                what: "dollar-quoted string",
                ..
            })
        ));
        assert!(matches!(
            NamedSql::parse("SELECT /* x"),
            Err(ParseError::Unterminated {
                what: "block comment",
                ..
            })
        ));
    }

    #[test]
    fn splits_scripts_at_top_level_semicolons_only() {
        let script = "-- header\nCREATE TABLE a (x text DEFAULT ';');\n\n\
                      CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n\
                      /* only a comment */;\n   \nSELECT 2";
        let parts = split_statements(script).expect("split");
        assert_eq!(
            parts,
            vec![
                "-- header\nCREATE TABLE a (x text DEFAULT ';')",
                "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql",
                "SELECT 2",
            ]
        );
    }
}
