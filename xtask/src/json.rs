//! The little JSON that `target/bench/results.json` needs: a value type and
//! its writer (the parser is in `json_parser.rs`). Numbers keep the text they
//! were read with, so records we do not touch are written back unchanged.

use std::fmt::{self, Write};

/// A JSON value. Objects keep their keys in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// A number value from a float; non-finite numbers become `null`.
    pub fn number(number: f64) -> Value {
        if number.is_finite() {
            Value::Number(format!("{number:?}"))
        } else {
            Value::Null
        }
    }

    /// The value under `key`, if this is an object that has it.
    pub fn field(&self, key: &str) -> Option<&Value> {
        let Value::Object(fields) = self else {
            return None;
        };
        fields
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    }

    /// The text under `key`, if it is a string.
    pub fn text_field(&self, key: &str) -> Option<&str> {
        match self.field(key) {
            Some(Value::String(text)) => Some(text),
            _ => None,
        }
    }
}

/// Compact JSON with a space after `:` and `,`, as DESIGN.md shows records.
impl fmt::Display for Value {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => formatter.write_str("null"),
            Value::Bool(value) => write!(formatter, "{value}"),
            Value::Number(text) => formatter.write_str(text),
            Value::String(text) => write_string(formatter, text),
            Value::Array(items) => write_array(formatter, items),
            Value::Object(fields) => write_object(formatter, fields),
        }
    }
}

fn write_array(formatter: &mut fmt::Formatter<'_>, items: &[Value]) -> fmt::Result {
    formatter.write_char('[')?;
    for (index, item) in items.iter().enumerate() {
        formatter.write_str(if index == 0 { "" } else { ", " })?;
        write!(formatter, "{item}")?;
    }
    formatter.write_char(']')
}

fn write_object(formatter: &mut fmt::Formatter<'_>, fields: &[(String, Value)]) -> fmt::Result {
    formatter.write_char('{')?;
    for (index, (key, value)) in fields.iter().enumerate() {
        formatter.write_str(if index == 0 { "" } else { ", " })?;
        write_string(formatter, key)?;
        write!(formatter, ": {value}")?;
    }
    formatter.write_char('}')
}

fn write_string(formatter: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    formatter.write_char('"')?;
    for character in text.chars() {
        match character {
            '"' => formatter.write_str("\\\"")?,
            '\\' => formatter.write_str("\\\\")?,
            '\n' => formatter.write_str("\\n")?,
            control if u32::from(control) < 0x20 => {
                write!(formatter, "\\u{:04x}", u32::from(control))?
            }
            other => formatter.write_char(other)?,
        }
    }
    formatter.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_written_as_design_md_shows_it() {
        let record = Value::Object(vec![
            ("group".into(), Value::String("locks".into())),
            ("lamina".into(), Value::number(21.0)),
            ("linux".into(), Value::Null),
            ("quoted".into(), Value::String("a\"b\\c\n\u{1}".into())),
            (
                "list".into(),
                Value::Array(vec![Value::Bool(true), Value::number(f64::NAN)]),
            ),
        ]);
        assert_eq!(
            record.to_string(),
            r#"{"group": "locks", "lamina": 21.0, "linux": null, "quoted": "a\"b\\c\n\u0001", "list": [true, null]}"#
        );
        assert_eq!(record.text_field("group"), Some("locks"));
        assert_eq!(record.text_field("lamina"), None);
    }
}
