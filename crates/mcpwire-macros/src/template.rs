//! The variables of a resource URI template (`scheme://path/{var}`), checked at compile
//! time with the same rules the router applies when it registers the template.

/// The variable names of `template`, in order; an error for unbalanced or empty braces.
pub fn variables(template: &str) -> Result<Vec<String>, String> {
    let mut vars = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            return Err(format!("unclosed `{{` in the URI template {template:?}"));
        };
        let name = &rest[open + 1..open + close];
        if name.is_empty() {
            return Err(format!(
                "empty variable `{{}}` in the URI template {template:?}"
            ));
        }
        vars.push(name.to_owned());
        rest = &rest[open + close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("unopened `}}` in the URI template {template:?}"));
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::variables;

    #[test]
    fn reads_variables() {
        assert_eq!(
            variables("notes://{id}/x/{part}"),
            Ok(vec!["id".into(), "part".into()])
        );
        assert_eq!(variables("notes://all"), Ok(vec![]));
        assert!(variables("notes://{id").is_err());
        assert!(variables("notes://{}").is_err());
        assert!(variables("notes://id}").is_err());
    }
}
