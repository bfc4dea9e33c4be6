//! The path to a sub-parameter dict, as ansible-core's messages write it before an option's name.

/// Where a sub-parameter dict is, as ansible-core names it in messages (`a.b[0].`): made
/// into text only for a message that shows it.
#[derive(Clone, Copy)]
pub(super) enum Prefix<'a> {
    Top,
    Below {
        parent: &'a Prefix<'a>,
        name: &'a str,
        /// The item's index, for an option holding a list of dicts.
        index: Option<usize>,
    },
}

impl Prefix<'_> {
    pub(super) fn text(&self) -> String {
        let mut text = String::new();
        self.write(&mut text);
        text
    }

    fn write(&self, into: &mut String) {
        use std::fmt::Write;
        if let Prefix::Below {
            parent,
            name,
            index,
        } = self
        {
            parent.write(into);
            into.push_str(name);
            if let Some(index) = index {
                let _ = write!(into, "[{index}]");
            }
            into.push('.');
        }
    }
}
