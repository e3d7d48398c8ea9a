//! The keys and values one sequence holds, written in place as it grows.
//!
//! Each layer's keys (and values) live in a buffer `[1, kv heads,
//! capacity, head dim]` whose first [`KvState::len`] tokens are filled.
//! A step appends its new tokens' keys with one copy of those tokens
//! ([`KvState::append`]) instead of concatenating the whole history into
//! a new tensor: at an agent's 3,000-token context that was 168 MB of
//! copying per sequence per step for the 1.5B model (BENCHMARKS.md).
//!
//! In-place writes need one owner: a state taken from the prefix cache
//! is shared (cloning shares the buffers), so a request first takes its
//! own copy with room to grow ([`KvState::owned`]), once, and that copy is
//! what the cache keeps when the request ends.

use candle_core::{Device, Tensor};

use super::qwen2::Result;

/// The keys and values one sequence holds (see the module).
#[derive(Clone, Default)]
pub(super) struct KvState {
    /// Per layer, the key and value buffers.
    layers: Vec<(Tensor, Tensor)>,
    /// Tokens filled.
    len: usize,
    /// Tokens of room a buffer is given beyond what it must hold when it
    /// is first made (or when it must grow: then at least as much again).
    room: usize,
}

impl KvState {
    /// An empty state whose buffers, once made, have `room` tokens to
    /// spare.
    pub(super) fn with_room(room: usize) -> Self {
        Self {
            room,
            ..Self::default()
        }
    }

    /// A state holding `layers` (`[1, kv heads, tokens, head dim]` each,
    /// all of `len` tokens), as read from a file.
    pub(super) fn from_layers(layers: Vec<(Tensor, Tensor)>, len: usize) -> Self {
        Self {
            layers,
            len,
            room: 0,
        }
    }

    /// Tokens held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Marks the tokens of a forward pass held, once every layer has
    /// appended them.
    pub(super) fn advance(&mut self, tokens: usize) {
        self.len += tokens;
    }

    /// Each layer's filled keys and values, `[1, kv heads, len, head dim]`
    /// (views of the buffers).
    pub(super) fn filled(&self) -> Result<Vec<(Tensor, Tensor)>> {
        self.layers
            .iter()
            .map(|(k, v)| Ok((k.narrow(2, 0, self.len)?, v.narrow(2, 0, self.len)?)))
            .collect()
    }

    /// A state of its own holding the first `tokens` tokens of this one
    /// (all of them when it holds fewer), with `room` tokens to spare:
    /// what a request starts from, so that its writes reach no other
    /// state.
    pub(super) fn owned(&self, tokens: usize, room: usize) -> Result<KvState> {
        let len = tokens.min(self.len);
        let layers = self
            .layers
            .iter()
            .map(|(k, v)| {
                Ok((
                    copy_into_new(k, len, len + room)?,
                    copy_into_new(v, len, len + room)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(KvState { layers, len, room })
    }

    /// Writes the keys and values of `k` and `v` (`[1, kv heads, n, head
    /// dim]`, contiguous) for layer `index` after the tokens held, and
    /// returns that layer's keys and values so far, `[1, kv heads, len +
    /// n, head dim]`. A buffer too small is replaced by one with room.
    pub(super) fn append(
        &mut self,
        index: usize,
        k: &Tensor,
        v: &Tensor,
    ) -> Result<(Tensor, Tensor)> {
        let end = self.len + k.dim(2)?;
        if index == self.layers.len() {
            if self.len > 0 {
                candle_core::bail!(
                    "layer {index} of a state that holds {} tokens is missing",
                    self.len
                );
            }
            let capacity = end + self.room.max(end);
            self.layers
                .push((empty_like(k, capacity)?, empty_like(v, capacity)?));
        }
        let Some((kb, vb)) = self.layers.get_mut(index) else {
            candle_core::bail!("layer {index} comes before the layers a state holds");
        };
        if kb.dim(2)? < end {
            let capacity = end + self.room.max(end);
            *kb = copy_into_new(kb, self.len, capacity)?;
            *vb = copy_into_new(vb, self.len, capacity)?;
        }
        kb.slice_set(k, 2, self.len)?;
        vb.slice_set(v, 2, self.len)?;
        Ok((kb.narrow(2, 0, end)?, vb.narrow(2, 0, end)?))
    }
}

/// A zeroed buffer shaped like `t` with `capacity` tokens.
fn empty_like(t: &Tensor, capacity: usize) -> Result<Tensor> {
    let (one, heads, _, dim) = t.dims4()?;
    Tensor::zeros((one, heads, capacity, dim), t.dtype(), &Device::Cpu)
}

/// A new buffer of `capacity` tokens holding the first `len` of `buffer`.
fn copy_into_new(buffer: &Tensor, len: usize, capacity: usize) -> Result<Tensor> {
    let fresh = empty_like(buffer, capacity)?;
    if len > 0 {
        fresh.slice_set(&buffer.narrow(2, 0, len)?.contiguous()?, 2, 0)?;
    }
    Ok(fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[1, 1, n, 2]` holding `from, from + 1, …`.
    fn tokens(from: f32, n: usize) -> Tensor {
        Tensor::arange(from, from + 2.0 * n as f32, &Device::Cpu)
            .unwrap()
            .reshape((1, 1, n, 2))
            .unwrap()
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    }

    /// Appends `n` tokens to every one of two layers.
    fn step(state: &mut KvState, from: f32, n: usize) -> Vec<f32> {
        let t = tokens(from, n);
        let (k, _) = state.append(0, &t, &t).unwrap();
        state.append(1, &t, &t).unwrap();
        state.advance(n);
        values(&k)
    }

    #[test]
    fn appended_tokens_follow_the_held_ones_and_the_buffer_grows() {
        let mut state = KvState::with_room(1);
        assert_eq!(step(&mut state, 0.0, 2), [0.0, 1.0, 2.0, 3.0]);
        // Capacity 2 + 2: the third token fits, the fifth makes it grow.
        assert_eq!(step(&mut state, 4.0, 1), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(step(&mut state, 6.0, 2).len(), 10);
        assert_eq!(state.len(), 5);
        let filled = state.filled().unwrap();
        assert_eq!(filled.len(), 2);
        assert_eq!(
            values(&filled[1].1),
            (0..10).map(|i| i as f32).collect::<Vec<_>>()
        );
    }

    #[test]
    fn an_owned_copy_is_cut_to_its_tokens_and_writes_reach_only_it() {
        let mut cached = KvState::with_room(8);
        step(&mut cached, 0.0, 3);
        let mut first = cached.owned(2, 4).unwrap();
        let mut second = cached.owned(2, 4).unwrap();
        assert_eq!(first.len(), 2);
        assert_eq!(
            step(&mut first, 100.0, 1),
            [0.0, 1.0, 2.0, 3.0, 100.0, 101.0]
        );
        assert_eq!(
            step(&mut second, 200.0, 1),
            [0.0, 1.0, 2.0, 3.0, 200.0, 201.0]
        );
        assert_eq!(
            values(&cached.filled().unwrap()[0].0),
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        assert_eq!(cached.owned(9, 0).unwrap().len(), 3);
        assert_eq!(KvState::default().owned(4, 4).unwrap().len(), 0);
    }
}
