//! The HCL2 functions plansim evaluates: a common subset of those Nomad's
//! job parser declares (jobspec2's functions, from go-cty's stdlib).

use hcl::Value;
use hcl::eval::{Context, FuncArgs, FuncDef, ParamType};

/// The functions plansim evaluates (a common subset of Nomad's HCL2 ones).
pub(super) const FUNCTIONS: [&str; 22] = [
    "abs",
    "ceil",
    "coalesce",
    "concat",
    "contains",
    "element",
    "floor",
    "format",
    "join",
    "keys",
    "length",
    "lookup",
    "lower",
    "max",
    "merge",
    "min",
    "replace",
    "split",
    "tonumber",
    "tostring",
    "trimspace",
    "upper",
];

/// Declares every function of [`FUNCTIONS`] in `ctx`.
pub(super) fn declare_functions(ctx: &mut Context) {
    declare_string_functions(ctx);
    declare_number_functions(ctx);
    declare_collection_functions(ctx);
}

/// Text: case, trimming, conversion, joining, splitting and replacing.
fn declare_string_functions(ctx: &mut Context) {
    ctx.declare_func(
        "upper",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.to_uppercase())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "lower",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.to_lowercase())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "trimspace",
        FuncDef::new(
            |a| Ok(Value::from(str_arg(&a, 0)?.trim())),
            [ParamType::String],
        ),
    );
    ctx.declare_func(
        "tostring",
        FuncDef::new(|a| Ok(Value::from(scalar_text(&a[0])?)), [ParamType::Any]),
    );
    ctx.declare_func(
        "tonumber",
        FuncDef::new(
            |a| match &a[0] {
                Value::Number(_) => Ok(a[0].clone()),
                Value::String(s) => s
                    .trim()
                    .parse::<i64>()
                    .map(Value::from)
                    .or_else(|_| s.trim().parse::<f64>().map(Value::from))
                    .map_err(|_| format!("\"{s}\" is not a number")),
                other => Err(format!("cannot convert {other} to a number")),
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func(
        "join",
        FuncDef::new(
            |a| {
                let sep = str_arg(&a, 0)?;
                let parts: Result<Vec<String>, String> = a[1]
                    .as_array()
                    .ok_or("join: expected a list")?
                    .iter()
                    .map(scalar_text)
                    .collect();
                Ok(Value::from(parts?.join(sep)))
            },
            [ParamType::String, ParamType::Any],
        ),
    );
    ctx.declare_func(
        "split",
        FuncDef::new(
            |a| {
                let sep = str_arg(&a, 0)?;
                Ok(Value::Array(
                    str_arg(&a, 1)?.split(sep).map(Value::from).collect(),
                ))
            },
            [ParamType::String, ParamType::String],
        ),
    );
    ctx.declare_func(
        "replace",
        FuncDef::new(
            |a| {
                Ok(Value::from(
                    str_arg(&a, 0)?.replace(str_arg(&a, 1)?, str_arg(&a, 2)?),
                ))
            },
            [ParamType::String, ParamType::String, ParamType::String],
        ),
    );
    ctx.declare_func(
        "format",
        FuncDef::builder()
            .param(ParamType::String)
            .variadic_param(ParamType::Any)
            .build(|a| {
                let spec = str_arg(&a, 0)?;
                let mut args = a[1..].iter();
                let mut out = String::new();
                let mut chars = spec.chars();
                while let Some(c) = chars.next() {
                    if c != '%' {
                        out.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('%') => out.push('%'),
                        Some('s' | 'd' | 'v') => out.push_str(&scalar_text(
                            args.next().ok_or("format: too few arguments")?,
                        )?),
                        other => {
                            return Err(format!(
                                "format: verb %{} is not supported (use %s, %d, %v)",
                                other.unwrap_or(' ')
                            ));
                        }
                    }
                }
                Ok(Value::from(out))
            }),
    );
}

/// Numbers: min, max and rounding.
fn declare_number_functions(ctx: &mut Context) {
    let any = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func("min", any(|a| fold_numbers(&a, f64::min)));
    ctx.declare_func("max", any(|a| fold_numbers(&a, f64::max)));
    ctx.declare_func(
        "abs",
        FuncDef::new(|a| number_map(&a, f64::abs), [ParamType::Number]),
    );
    ctx.declare_func(
        "ceil",
        FuncDef::new(|a| number_map(&a, f64::ceil), [ParamType::Number]),
    );
    ctx.declare_func(
        "floor",
        FuncDef::new(|a| number_map(&a, f64::floor), [ParamType::Number]),
    );
}

/// Lists and maps.
fn declare_collection_functions(ctx: &mut Context) {
    let any = |f| FuncDef::builder().variadic_param(ParamType::Any).build(f);
    ctx.declare_func(
        "concat",
        any(|a| {
            let mut out = Vec::new();
            for list in a.iter() {
                out.extend(
                    list.as_array()
                        .ok_or("concat: expected lists")?
                        .iter()
                        .cloned(),
                );
            }
            Ok(Value::Array(out))
        }),
    );
    ctx.declare_func(
        "length",
        FuncDef::new(
            |a| match &a[0] {
                Value::Array(v) => Ok(Value::from(v.len() as u64)),
                Value::Object(m) => Ok(Value::from(m.len() as u64)),
                Value::String(s) => Ok(Value::from(s.chars().count() as u64)),
                other => Err(format!("length: cannot measure {other}")),
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func(
        "coalesce",
        any(|a| {
            a.iter()
                .find(|v| !v.is_null() && v.as_str() != Some(""))
                .cloned()
                .ok_or_else(|| "coalesce: every argument is null or empty".to_string())
        }),
    );
    ctx.declare_func(
        "contains",
        FuncDef::new(
            |a| {
                Ok(Value::from(
                    a[0].as_array()
                        .ok_or("contains: expected a list")?
                        .contains(&a[1]),
                ))
            },
            [ParamType::Any, ParamType::Any],
        ),
    );
    ctx.declare_func(
        "element",
        FuncDef::new(
            |a| {
                let list = a[0].as_array().ok_or("element: expected a list")?;
                let index = a[1].as_u64().ok_or("element: expected an index")? as usize;
                if list.is_empty() {
                    return Err("element: the list is empty".into());
                }
                Ok(list[index % list.len()].clone())
            },
            [ParamType::Any, ParamType::Number],
        ),
    );
    ctx.declare_func(
        "lookup",
        FuncDef::builder()
            .params([ParamType::Any, ParamType::String])
            .variadic_param(ParamType::Any)
            .build(|a| {
                let map = a[0].as_object().ok_or("lookup: expected a map")?;
                let key = str_arg(&a, 1)?;
                map.get(key)
                    .cloned()
                    .or_else(|| a.get(2).cloned())
                    .ok_or_else(|| format!("lookup: no key \"{key}\" and no default"))
            }),
    );
    ctx.declare_func(
        "keys",
        FuncDef::new(
            |a| {
                let mut keys: Vec<String> = a[0]
                    .as_object()
                    .ok_or("keys: expected a map")?
                    .keys()
                    .cloned()
                    .collect();
                keys.sort();
                Ok(Value::Array(keys.into_iter().map(Value::from).collect()))
            },
            [ParamType::Any],
        ),
    );
    ctx.declare_func(
        "merge",
        any(|a| {
            let mut out = hcl::Map::new();
            for map in a.iter() {
                for (k, v) in map.as_object().ok_or("merge: expected maps")? {
                    out.insert(k.clone(), v.clone());
                }
            }
            Ok(Value::Object(out))
        }),
    );
}

fn str_arg(args: &FuncArgs, index: usize) -> Result<&str, String> {
    args.get(index)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument {index} must be a string"))
}

fn scalar_text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("{other} is not a string, number or bool")),
    }
}

fn fold_numbers(args: &FuncArgs, f: fn(f64, f64) -> f64) -> Result<Value, String> {
    let mut numbers = args.iter().map(|v| v.as_f64().ok_or("expected numbers"));
    let first = numbers.next().ok_or("expected at least one number")??;
    let result = numbers.try_fold(first, |acc, n| n.map(|n| f(acc, n)))?;
    Ok(number_value(result))
}

fn number_map(args: &FuncArgs, f: fn(f64) -> f64) -> Result<Value, String> {
    Ok(number_value(f(args[0]
        .as_f64()
        .ok_or("expected a number")?)))
}

fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        Value::from(n)
    }
}
