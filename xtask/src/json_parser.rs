//! Reads JSON text into a [`Value`]; malformed input is an error message.

use crate::json::Value;

/// Parses a whole JSON document.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut parser = Parser {
        characters: text.chars().collect(),
        position: 0,
    };
    let value = parser.value()?;
    parser.skip_space();
    match parser.peek() {
        None => Ok(value),
        Some(extra) => Err(parser.error(&format!("unexpected `{extra}` after the value"))),
    }
}

struct Parser {
    characters: Vec<char>,
    position: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.characters.get(self.position).copied()
    }

    fn error(&self, message: &str) -> String {
        format!("{message} at character {}", self.position)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), String> {
        self.skip_space();
        match self.peek() {
            Some(found) if found == wanted => {
                self.position += 1;
                Ok(())
            }
            _ => Err(self.error(&format!("expected `{wanted}`"))),
        }
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_space();
        match self.peek() {
            Some('{') => self.object(),
            Some('[') => self.array(),
            Some('"') => self.string().map(Value::String),
            Some('t') => self.word("true", Value::Bool(true)),
            Some('f') => self.word("false", Value::Bool(false)),
            Some('n') => self.word("null", Value::Null),
            Some(first) if first == '-' || first.is_ascii_digit() => Ok(self.number()),
            _ => Err(self.error("expected a value")),
        }
    }

    fn word(&mut self, word: &str, value: Value) -> Result<Value, String> {
        for wanted in word.chars() {
            if self.peek() != Some(wanted) {
                return Err(self.error(&format!("expected `{word}`")));
            }
            self.position += 1;
        }
        Ok(value)
    }

    fn number(&mut self) -> Value {
        let start = self.position;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || "+-.eE".contains(c))
        {
            self.position += 1;
        }
        Value::Number(self.characters[start..self.position].iter().collect())
    }

    /// Reads `"..."` with its escapes.
    fn string(&mut self) -> Result<String, String> {
        self.expect('"')?;
        let mut text = String::new();
        loop {
            let character = self
                .peek()
                .ok_or_else(|| self.error("unterminated string"))?;
            self.position += 1;
            match character {
                '"' => return Ok(text),
                '\\' => text.push(self.escape()?),
                other => text.push(other),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let character = self
            .peek()
            .ok_or_else(|| self.error("unterminated escape"))?;
        self.position += 1;
        Ok(match character {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'u' => self.unicode_escape()?,
            other => other,
        })
    }

    /// The four hex digits after `\u` (surrogate pairs are not needed here).
    fn unicode_escape(&mut self) -> Result<char, String> {
        let digits: String = self.characters.iter().skip(self.position).take(4).collect();
        self.position += 4;
        let code = u32::from_str_radix(&digits, 16).map_err(|_| self.error("bad \\u escape"))?;
        Ok(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    fn array(&mut self) -> Result<Value, String> {
        self.expect('[')?;
        let mut items = Vec::new();
        while !self.closes(']', items.is_empty())? {
            items.push(self.value()?);
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self) -> Result<Value, String> {
        self.expect('{')?;
        let mut fields = Vec::new();
        while !self.closes('}', fields.is_empty())? {
            self.skip_space();
            let key = self.string()?;
            self.expect(':')?;
            fields.push((key, self.value()?));
        }
        Ok(Value::Object(fields))
    }

    /// True (and consumed) at the closing bracket; otherwise eats the `,`
    /// that must separate items after the first.
    fn closes(&mut self, closing: char, first: bool) -> Result<bool, String> {
        self.skip_space();
        if self.peek() == Some(closing) {
            self.position += 1;
            return Ok(true);
        }
        if !first {
            self.expect(',')?;
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back_the_same() {
        let text = r#"[{"group": "locks", "name": "a\"b\u00e9", "lamina": 2.1e3, "linux": null, "ok": [true, false, -1]}]"#;
        let value = parse(text).unwrap();
        assert_eq!(value.to_string(), text.replace("\\u00e9", "é"));
    }

    #[test]
    fn whitespace_and_empty_containers_are_accepted() {
        assert_eq!(parse(" [ ] ").unwrap(), Value::Array(vec![]));
        assert_eq!(parse("\n{ }\n").unwrap(), Value::Object(vec![]));
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in [
            "",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\": 1",
            "\"open",
            "nul",
            "[] x",
        ] {
            assert!(parse(bad).is_err(), "`{bad}` was accepted");
        }
    }
}
