//! ModuleDepFinder's name rules: which imports count, and how relative ones resolve.

use super::{Fallback, NameParts};

/// The file being scanned, as ModuleDepFinder knows it.
pub struct Context<'a> {
    pub module_fqn: &'a str,
    pub is_pkg_init: bool,
}

fn split_parts(dotted: &str) -> NameParts {
    dotted.split('.').map(str::to_owned).collect()
}

/// `import X`: the names that count, split on dots.
pub fn import_name(name: &str) -> Option<NameParts> {
    if name.starts_with("ansible.module_utils.") || name.starts_with("ansible_collections.") {
        Some(split_parts(name))
    } else {
        None
    }
}

/// The module an `ImportFrom` names after relative resolution; `None` where ModuleDepFinder
/// ends up with Python's `None` (no module text and nothing to resolve against).
pub fn from_module(context: &Context<'_>, level: u32, module: Option<&str>) -> Option<String> {
    if level == 0 || context.module_fqn.is_empty() {
        return module.map(str::to_owned);
    }
    let parts: Vec<&str> = context.module_fqn.split('.').collect();
    let kept = kept_parts(parts.len(), level, context.is_pkg_init);
    let mut joined: Vec<&str> = parts[..kept].to_vec();
    if let Some(module) = module {
        joined.push(module);
    }
    Some(joined.join("."))
}

/// `parts[:offset]`'s length, offset being `-level + 1 or None` in a package `__init__` and
/// `-level` elsewhere (a package's own name stands for its first level).
fn kept_parts(len: usize, level: u32, is_pkg_init: bool) -> usize {
    let dropped = if is_pkg_init {
        level as usize - 1
    } else {
        level as usize
    };
    len.saturating_sub(dropped)
}

/// The prefix of every name an `ImportFrom` adds, or `None` when its names do not count.
/// `Err` where ModuleDepFinder raises (it calls `.startswith` on `None`).
pub fn from_prefix(node_module: Option<&str>) -> Result<Option<NameParts>, Fallback> {
    let Some(node_module) = node_module else {
        return Err(Fallback::FinderError);
    };
    if node_module.starts_with("ansible.module_utils") {
        return Ok(Some(split_parts(node_module)));
    }
    if node_module.starts_with("ansible_collections.")
        && (node_module.ends_with("plugins.module_utils")
            || node_module.contains(".plugins.module_utils."))
    {
        return Ok(Some(split_parts(node_module)));
    }
    Ok(None)
}

/// ansible-core 2.21+ switches to assignment analysis after these top-level imports.
pub fn is_embed_import(node_module: &str, alias: &str) -> bool {
    (alias == "embed" && node_module == "ansible.module_utils")
        || (alias == "EmbedManager" && node_module == "ansible.module_utils.embed")
}
