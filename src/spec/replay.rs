//! A YAML tree handed to a [`Consumer`] as [`yaml::read`](super::yaml::read) streams a file: an
//! inline `dataflow:` is a spec inside a component's entry, and validating it through the same
//! [`Reader`](super::reader::Reader) as a file makes it the same format, with the same checks.

use super::yaml::{Consumer, Node, Take, Value};

/// Feeds `root` to `consumer` the way the streaming reader would feed a document whose root is
/// `root`.
pub(super) fn replay<C: Consumer>(root: Node, consumer: &mut C) {
    let Value::Map(entries) = root.value else {
        consumer.root(root);
        return;
    };
    for (key, value) in entries {
        match consumer.key(key) {
            Take::Whole => consumer.value(value),
            Take::Entries => match value.value {
                Value::Map(entries) => {
                    for (k, v) in entries {
                        if consumer.entry_key(k) {
                            consumer.entry_value(v);
                        }
                    }
                }
                _ => consumer.value(value),
            },
            Take::Items => match value.value {
                Value::Seq(items) => {
                    for item in items {
                        if consumer.want_item() {
                            consumer.item(item);
                        }
                    }
                }
                _ => consumer.value(value),
            },
            Take::Skip => {}
        }
        consumer.end();
    }
}
