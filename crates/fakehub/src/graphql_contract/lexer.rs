//! GraphQL's lexical grammar for the executable documents a bot sends:
//! tokens with their 1-based positions, as graphql-ruby reports them.
//!
//! Owns: [`Lexer`] and its [`Tok`]ens. Must not: know the grammar above
//! tokens (the parser) or the schema.

use super::*;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Punct(char),
    Spread,
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    End,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Tok::Punct(c) => write!(f, "{c}"),
            Tok::Spread => f.write_str("..."),
            Tok::Name(n) => f.write_str(n),
            Tok::Int(i) => write!(f, "{i}"),
            Tok::Float(x) => write!(f, "{x}"),
            Tok::Str(s) => write!(f, "{}", json!(s)),
            Tok::End => f.write_str("end of file"),
        }
    }
}

pub(super) struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
}

impl Lexer {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.col,
        }
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_at(0)?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    /// Whitespace, commas (insignificant in GraphQL), BOMs and comments.
    fn skip_ignored(&mut self) {
        while let Some(c) = self.peek_at(0) {
            match c {
                ' ' | '\t' | '\n' | '\r' | ',' | '\u{feff}' => {
                    self.bump();
                }
                '#' => {
                    while self.peek_at(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
    }

    pub(super) fn tokens(src: &str) -> Result<Vec<(Tok, Pos)>, GqlError> {
        let mut lx = Lexer {
            chars: src.chars().collect(),
            i: 0,
            line: 1,
            col: 1,
        };
        let mut out = Vec::new();
        loop {
            lx.skip_ignored();
            let pos = lx.pos();
            let Some(c) = lx.peek_at(0) else {
                out.push((Tok::End, pos));
                return Ok(out);
            };
            let tok = match c {
                '!' | '$' | '&' | '(' | ')' | ':' | '=' | '@' | '[' | ']' | '{' | '|' | '}' => {
                    lx.bump();
                    Tok::Punct(c)
                }
                '.' => lx.spread(pos)?,
                '"' => lx.string(pos)?,
                '-' | '0'..='9' => lx.number(pos)?,
                c if c == '_' || c.is_ascii_alphabetic() => lx.name(),
                other => {
                    return Err(GqlError::new(
                        format!(
                            "Parse error on \"{other}\" (UNKNOWN_CHAR) at [{}, {}]",
                            pos.line, pos.column
                        ),
                        Some(pos),
                    ))
                }
            };
            out.push((tok, pos));
        }
    }

    fn spread(&mut self, pos: Pos) -> Result<Tok, GqlError> {
        if self.peek_at(1) == Some('.') && self.peek_at(2) == Some('.') {
            self.i += 3;
            self.col += 3;
            return Ok(Tok::Spread);
        }
        Err(syntax(".", pos))
    }

    fn name(&mut self) -> Tok {
        let mut s = String::new();
        while let Some(c) = self
            .peek_at(0)
            .filter(|c| *c == '_' || c.is_ascii_alphanumeric())
        {
            s.push(c);
            self.bump();
        }
        Tok::Name(s)
    }

    fn number(&mut self, pos: Pos) -> Result<Tok, GqlError> {
        let mut s = String::new();
        let mut float = false;
        while let Some(c) = self.peek_at(0) {
            let part = c.is_ascii_digit()
                || (c == '-' && (s.is_empty() || s.ends_with(['e', 'E'])))
                || (c == '+' && s.ends_with(['e', 'E']))
                || matches!(c, '.' | 'e' | 'E');
            if !part {
                break;
            }
            float |= matches!(c, '.' | 'e' | 'E');
            s.push(c);
            self.bump();
        }
        let bad = || syntax(&s, pos);
        if float {
            s.parse().map(Tok::Float).map_err(|_| bad())
        } else {
            s.parse().map(Tok::Int).map_err(|_| bad())
        }
    }

    fn string(&mut self, pos: Pos) -> Result<Tok, GqlError> {
        if self.peek_at(1) == Some('"') && self.peek_at(2) == Some('"') {
            return self.block_string(pos);
        }
        self.bump();
        let mut s = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return Err(syntax("unterminated string", pos)),
                Some('"') => return Ok(Tok::Str(s)),
                Some('\\') => s.push(self.escape(pos)?),
                Some(c) => s.push(c),
            }
        }
    }

    fn escape(&mut self, pos: Pos) -> Result<char, GqlError> {
        Ok(match self.bump() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('/') => '/',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('u') => {
                let hex: String = (0..4).filter_map(|_| self.bump()).collect();
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| syntax(&format!("\\u{hex}"), pos))?
            }
            _ => return Err(syntax("bad escape in string", pos)),
        })
    }

    /// `"""..."""`, kept raw: taskgate sends no block strings, and their
    /// indentation rules would only matter for their text.
    fn block_string(&mut self, pos: Pos) -> Result<Tok, GqlError> {
        for _ in 0..3 {
            self.bump();
        }
        let mut s = String::new();
        loop {
            if self.peek_at(0) == Some('"')
                && self.peek_at(1) == Some('"')
                && self.peek_at(2) == Some('"')
            {
                for _ in 0..3 {
                    self.bump();
                }
                return Ok(Tok::Str(s));
            }
            match self.bump() {
                None => return Err(syntax("unterminated string", pos)),
                Some(c) => s.push(c),
            }
        }
    }
}

/// graphql-ruby's wording: `Parse error on "}" (RCURLY) at [1, 5]`, minus
/// the token class.
pub(super) fn syntax(near: &str, pos: Pos) -> GqlError {
    GqlError::new(
        format!(
            "Parse error on \"{near}\" at [{}, {}]",
            pos.line, pos.column
        ),
        Some(pos),
    )
}
