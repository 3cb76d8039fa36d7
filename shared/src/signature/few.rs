//! A list whose first few items live on the stack: the signatures of one
//! header, the fields a recipe reads. The usual request then verifies
//! without allocating; a longer list still works, on the heap.

/// Up to `N` items inline, the rest in a `Vec` (which allocates only when
/// used).
#[derive(Debug, Clone)]
pub(crate) struct Few<T, const N: usize> {
    inline: [T; N],
    len: usize,
    spill: Vec<T>,
}

impl<T: Default, const N: usize> Few<T, N> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Self {
            inline: std::array::from_fn(|_| T::default()),
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Adds `item` at the end.
    pub(crate) fn push(&mut self, item: T) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = item,
            None => self.spill.push(item),
        }
        self.len += 1;
    }
}

impl<T, const N: usize> Few<T, N> {
    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// `true` when there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The items, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + Clone {
        self.inline[..self.len.min(N)]
            .iter()
            .chain(self.spill.iter())
    }

    /// The items as one slice, when they all fit inline.
    pub(crate) fn as_slice(&self) -> Option<&[T]> {
        self.inline.get(..self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_order_inline_and_beyond() {
        let mut few: Few<u32, 2> = Few::new();
        assert!(few.is_empty());
        assert_eq!(few.as_slice(), Some(&[][..]));
        for i in 0..5 {
            few.push(i);
        }
        assert_eq!(few.len(), 5);
        assert_eq!(few.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(few.as_slice(), None);
        let mut two: Few<u32, 2> = Few::new();
        two.push(7);
        two.push(8);
        assert_eq!(two.as_slice(), Some(&[7, 8][..]));
    }
}
