//! Values for a job file's variables, as `nomad job run -var` and
//! `-var-file` give them (jobspec2/types.variables.go at v2.0.5:
//! `collectInputVariableValues` gathers the values, var files in order and
//! then `-var`; `Variable.Value` takes the last one, else the default, else
//! fails "Unset variable"; a value for a variable the file does not declare
//! is a warning, an error under `-strict`).
//!
//! In a scenario they sit beside `file:`: `vars: {region: eu}` (the `-var`s,
//! typed as YAML types them) and `var_files: [prod.vars.hcl]`.

use hcl::Value;
use hcl::edit::expr::Expression;

/// One value given to a variable, and where it came from (for messages:
/// `vars.region`, `prod.vars.hcl:3:1`).
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub name: String,
    pub value: Value,
    pub from: String,
}

/// The values given to a job file's variables, lowest precedence first: a
/// variable takes the last one naming it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VarInputs {
    pub assignments: Vec<Assignment>,
}

impl VarInputs {
    /// The value `name` takes, if any is given.
    pub fn last_for(&self, name: &str) -> Option<&Assignment> {
        self.assignments.iter().rev().find(|a| a.name == name)
    }

    /// What the values are, in a form to key a cache by (where each came
    /// from does not change the job).
    pub fn key(&self) -> String {
        let values: Vec<(&str, &Value)> = self
            .assignments
            .iter()
            .map(|a| (a.name.as_str(), &a.value))
            .collect();
        format!("{values:?}")
    }

    pub fn is_empty(&self) -> bool {
        self.assignments.is_empty()
    }
}

/// A variable's `type`, as far as it changes a given value: Nomad converts
/// a value to a primitive type (`convert.Convert`); any other type takes
/// the value as given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VarType {
    String,
    Number,
    Bool,
    Other,
}

impl VarType {
    /// The type written in `type = ...` (`string`, `number`, `bool`, or a
    /// constructor such as `list(string)`).
    pub fn of(expr: &Expression) -> VarType {
        match expr {
            Expression::Variable(name) => match name.as_str() {
                "string" => VarType::String,
                "number" => VarType::Number,
                "bool" => VarType::Bool,
                _ => VarType::Other,
            },
            _ => VarType::Other,
        }
    }

    /// `value` converted to this type, as cty converts a primitive (a
    /// number or bool to its text, a numeric string to a number, "true" or
    /// "false" to a bool), or why it cannot be.
    pub fn convert(self, value: Value) -> Result<Value, String> {
        match (self, value) {
            (VarType::Other, value) => Ok(value),
            (VarType::String, Value::String(s)) => Ok(Value::String(s)),
            (VarType::String, Value::Number(n)) => Ok(Value::String(n.to_string())),
            (VarType::String, Value::Bool(b)) => Ok(Value::String(b.to_string())),
            (VarType::Number, Value::Number(n)) => Ok(Value::Number(n)),
            (VarType::Number, Value::String(s)) => parse_number(&s)
                .ok_or_else(|| format!("expected a number, found the string \"{s}\"")),
            (VarType::Bool, Value::Bool(b)) => Ok(Value::Bool(b)),
            (VarType::Bool, Value::String(s)) if s == "true" || s == "false" => {
                Ok(Value::Bool(s == "true"))
            }
            (want, found) => Err(format!("expected {}, found {found}", want.name())),
        }
    }

    fn name(self) -> &'static str {
        match self {
            VarType::String => "a string",
            VarType::Number => "a number",
            VarType::Bool => "true or false",
            VarType::Other => "a value",
        }
    }
}

fn parse_number(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(whole) = text.parse::<i64>() {
        return Some(Value::from(whole));
    }
    let float = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    hcl::Number::from_f64(float).map(Value::Number)
}
