//! The reader of one executable document: a `query` or `mutation` with
//! variable definitions, fields, aliases, arguments and selection sets,
//! into an [`Operation`](super::Operation).
//!
//! Owns: [`parse`] and its recursive descent. Must not: check the
//! document against the schema (`validation` does).

use super::*;

pub(super) struct Parser {
    toks: Vec<(Tok, Pos)>,
    i: usize,
}

/// Reads one executable document with a single operation.
pub(crate) fn parse(src: &str) -> Result<Operation, GqlError> {
    let mut p = Parser::new(src)?;
    let op = p.operation()?;
    match p.peek() {
        Tok::End => Ok(op),
        Tok::Name(n) if n == "fragment" => Err(GqlError::unsupported(
            "fakehub does not read fragments",
            Some(p.pos()),
        )),
        _ => Err(GqlError::unsupported(
            "fakehub reads one operation per document",
            Some(p.pos()),
        )),
    }
}

impl Parser {
    pub(super) fn new(src: &str) -> Result<Parser, GqlError> {
        Ok(Parser {
            toks: Lexer::tokens(src)?,
            i: 0,
        })
    }

    pub(super) fn peek(&self) -> &Tok {
        &self.toks[self.i].0
    }

    fn pos(&self) -> Pos {
        self.toks[self.i].1
    }

    fn next(&mut self) -> Tok {
        let t = self.toks[self.i].0.clone();
        if t != Tok::End {
            self.i += 1;
        }
        t
    }

    fn unexpected(&self) -> GqlError {
        syntax(&self.peek().to_string(), self.pos())
    }

    fn is_punct(&self, c: char) -> bool {
        *self.peek() == Tok::Punct(c)
    }

    fn expect(&mut self, c: char) -> Result<(), GqlError> {
        if self.is_punct(c) {
            self.next();
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    fn name(&mut self) -> Result<String, GqlError> {
        match self.peek().clone() {
            Tok::Name(n) => {
                self.next();
                Ok(n)
            }
            _ => Err(self.unexpected()),
        }
    }

    /// Directives change execution; the fake would silently ignore them.
    fn refuse_directive(&self) -> Result<(), GqlError> {
        if self.is_punct('@') {
            return Err(GqlError::unsupported(
                "fakehub does not read directives",
                Some(self.pos()),
            ));
        }
        Ok(())
    }

    fn operation(&mut self) -> Result<Operation, GqlError> {
        let pos = self.pos();
        if self.is_punct('{') {
            let selection = self.selection_set()?;
            return Ok(Operation {
                kind: OpKind::Query,
                name: None,
                vars: Vec::new(),
                selection,
                pos,
            });
        }
        let kind = match self.peek() {
            Tok::Name(n) if n == "query" => OpKind::Query,
            Tok::Name(n) if n == "mutation" => OpKind::Mutation,
            Tok::Name(n) if n == "subscription" || n == "fragment" => {
                return Err(GqlError::unsupported(
                    format!("fakehub does not read a {n}"),
                    Some(pos),
                ))
            }
            _ => return Err(self.unexpected()),
        };
        self.next();
        let name = match self.peek() {
            Tok::Name(_) => Some(self.name()?),
            _ => None,
        };
        let vars = self.var_defs()?;
        self.refuse_directive()?;
        let selection = self.selection_set()?;
        Ok(Operation {
            kind,
            name,
            vars,
            selection,
            pos,
        })
    }

    fn var_defs(&mut self) -> Result<Vec<VarDef>, GqlError> {
        let mut vars = Vec::new();
        if !self.is_punct('(') {
            return Ok(vars);
        }
        self.next();
        while !self.is_punct(')') {
            let pos = self.pos();
            self.expect('$')?;
            let name = self.name()?;
            self.expect(':')?;
            let ty = self.type_ref()?;
            let default = if self.is_punct('=') {
                self.next();
                Some(self.value()?)
            } else {
                None
            };
            self.refuse_directive()?;
            vars.push(VarDef {
                name,
                ty,
                default,
                pos,
            });
        }
        self.next();
        if vars.is_empty() {
            return Err(self.unexpected());
        }
        Ok(vars)
    }

    pub(super) fn type_ref(&mut self) -> Result<TypeRef, GqlError> {
        let inner = if self.is_punct('[') {
            self.next();
            let t = self.type_ref()?;
            self.expect(']')?;
            TypeRef::List(Box::new(t))
        } else {
            TypeRef::Named(self.name()?)
        };
        if self.is_punct('!') {
            self.next();
            return Ok(TypeRef::NonNull(Box::new(inner)));
        }
        Ok(inner)
    }

    fn selection_set(&mut self) -> Result<Vec<Field>, GqlError> {
        self.expect('{')?;
        let mut fields = Vec::new();
        while !self.is_punct('}') {
            if *self.peek() == Tok::Spread {
                return Err(GqlError::unsupported(
                    "fakehub does not read fragments",
                    Some(self.pos()),
                ));
            }
            fields.push(self.field()?);
        }
        self.next();
        if fields.is_empty() {
            return Err(self.unexpected());
        }
        Ok(fields)
    }

    fn field(&mut self) -> Result<Field, GqlError> {
        let pos = self.pos();
        let first = self.name()?;
        let (alias, name) = if self.is_punct(':') {
            self.next();
            (Some(first), self.name()?)
        } else {
            (None, first)
        };
        let args = self.args()?;
        self.refuse_directive()?;
        let selection = if self.is_punct('{') {
            self.selection_set()?
        } else {
            Vec::new()
        };
        Ok(Field {
            alias,
            name,
            args,
            selection,
            pos,
        })
    }

    fn args(&mut self) -> Result<Vec<Arg>, GqlError> {
        let mut args = Vec::new();
        if !self.is_punct('(') {
            return Ok(args);
        }
        self.next();
        while !self.is_punct(')') {
            let pos = self.pos();
            let name = self.name()?;
            self.expect(':')?;
            let value = self.value()?;
            args.push(Arg { name, value, pos });
        }
        self.next();
        if args.is_empty() {
            return Err(self.unexpected());
        }
        Ok(args)
    }

    fn value(&mut self) -> Result<Literal, GqlError> {
        let lit = match self.peek().clone() {
            Tok::Punct('$') => {
                self.next();
                return Ok(Literal::Var(self.name()?));
            }
            Tok::Punct('[') => return self.list(),
            Tok::Punct('{') => return self.object(),
            Tok::Int(i) => Literal::Int(i),
            Tok::Float(x) => Literal::Float(x),
            Tok::Str(s) => Literal::Str(s),
            Tok::Name(n) => match n.as_str() {
                "true" => Literal::Bool(true),
                "false" => Literal::Bool(false),
                "null" => Literal::Null,
                _ => Literal::Enum(n),
            },
            _ => return Err(self.unexpected()),
        };
        self.next();
        Ok(lit)
    }

    fn list(&mut self) -> Result<Literal, GqlError> {
        self.expect('[')?;
        let mut items = Vec::new();
        while !self.is_punct(']') {
            items.push(self.value()?);
        }
        self.next();
        Ok(Literal::List(items))
    }

    fn object(&mut self) -> Result<Literal, GqlError> {
        self.expect('{')?;
        let mut fields = Vec::new();
        while !self.is_punct('}') {
            let name = self.name()?;
            self.expect(':')?;
            fields.push((name, self.value()?));
        }
        self.next();
        Ok(Literal::Object(fields))
    }
}
