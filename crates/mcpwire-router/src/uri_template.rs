//! RFC 6570 level-1 URI templates (`scheme://path/{var}/more`), enough to route reads.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    Var(String),
}

/// A parsed URI template that can match URIs and extract variables.
#[derive(Debug, Clone, PartialEq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses `template`; braces must be balanced and variables non-empty.
    pub fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("unclosed '{{' in {template}"))?;
            let name = &rest[open + 1..open + close];
            if name.is_empty() {
                return Err(format!("empty variable in {template}"));
            }
            parts.push(Part::Var(name.to_owned()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches `uri`, returning the variables' values. A variable never spans a `/`.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    if rest[..end].contains('/') {
                        return None;
                    }
                    if end == 0 {
                        return None;
                    }
                    vars.insert(name.clone(), rest[..end].to_owned());
                    rest = &rest[end..];
                }
            }
            i += 1;
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_and_extracts() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let v = t.matches("test://template/42/data").unwrap();
        assert_eq!(v["id"], "42");
        assert!(t.matches("test://template/42/other").is_none());
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/a/b/data").is_none());
        let t = UriTemplate::parse("file:///{name}").unwrap();
        assert_eq!(t.matches("file:///x.txt").unwrap()["name"], "x.txt");
        assert!(UriTemplate::parse("x://{").is_err());
        assert_eq!(t.variables().collect::<Vec<_>>(), vec!["name"]);
    }
}
