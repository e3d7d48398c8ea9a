//! Causal self-attention of a segment's new tokens, one query row at a
//! time in one fixed order of operations.
//!
//! A token's output must not depend on the tokens computed beside it (the
//! chunk a prompt is read in, a cached prefix that moves where chunks
//! split, the requests decoding in the same step): that is what makes a
//! prompt's path repeatable (EVALS.md section 44). A batched product over
//! all of a chunk's queries rounds differently with the chunk's size, and
//! one product per token with candle's operations costs ten small tensor
//! operations per token and layer (the first prompt read fell from 89 to
//! 54 tokens/s). Here each (token, head) row is one unit of work on
//! candle's thread pool: its scores against every key it may see, a
//! softmax, the weighted sum of the values, each a loop whose order is the
//! same for every row.
//!
//! The loops are written over fixed-width lanes so that the compiler
//! vectorises them, and compiled for the widest SIMD the CPU has, picked
//! at run time (pulp: AVX2 and FMA on x86). Their products are fused
//! multiply-adds (`mul_add`), rounded once, exactly, by the instruction or
//! by libm where the CPU has none, and Rust fuses nothing on its own: every
//! build rounds alike, so the result is the same on any machine.

use std::sync::Mutex;

use candle_core::{Device, Layout, Storage, Tensor};

use super::qwen2::Result;

/// Lanes of the vectorised loops: one AVX-512 register, two AVX2 ones.
const LANES: usize = 16;

/// The new tokens' attention: `queries` `[1, heads, n, dim]` (after the
/// rotary embedding) against `keys` and `values` `[1, kv heads, position
/// + n or more, dim]`, of which new token `i` sees the first `position + i
/// + 1`. Query head `h` reads kv head `h / (heads / kv heads)`. Returns
/// `[n, heads × dim]`, each token's heads side by side.
pub(super) fn attend(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    position: usize,
) -> Result<Tensor> {
    // The pool's own count: candle's `get_num_threads` reads
    // /proc/cpuinfo at every call on x86 Linux, and this runs once per
    // layer and step.
    let threads = candle_core::utils::barrier_pool().n_workers() + 1;
    attend_in(queries, keys, values, position, threads, KEYS_PER_TILE)
}

/// [`attend`] with its units cut for `threads` threads and keys read
/// `tile` at a time; neither changes a bit of the result.
fn attend_in(
    queries: &Tensor,
    keys: &Tensor,
    values: &Tensor,
    position: usize,
    threads: usize,
    tile: usize,
) -> Result<Tensor> {
    let queries = queries.contiguous()?;
    let (_, heads, n, dim) = queries.dims4()?;
    let (_, kv_heads, held, key_dim) = keys.dims4()?;
    if key_dim != dim || values.dims4()? != keys.dims4()? {
        candle_core::bail!(
            "attention: queries {:?}, keys {:?}, values {:?} do not fit",
            queries.dims(),
            keys.dims(),
            values.dims()
        );
    }
    if kv_heads == 0 || heads % kv_heads != 0 || held < position + n {
        candle_core::bail!(
            "attention: {heads} heads over {kv_heads} kv heads, {held} keys held for {} tokens",
            position + n
        );
    }
    let (q_storage, q_layout) = queries.storage_and_layout();
    let (k_storage, k_layout) = keys.storage_and_layout();
    let (v_storage, v_layout) = values.storage_and_layout();
    let q = &cpu_f32(&q_storage)?[q_layout.start_offset()..];
    let keys = Rows::new(cpu_f32(&k_storage)?, k_layout, dim)?;
    let values = Rows::new(cpu_f32(&v_storage)?, v_layout, dim)?;
    let group = heads / kv_heads;
    let scale = 1.0 / (dim as f32).sqrt();

    let mut out = vec![0f32; n * heads * dim];
    let slots: Vec<Mutex<&mut [f32]>> = out.chunks_mut(dim).map(Mutex::new).collect();
    let split = Split::new(n * kv_heads, group, threads);
    let job = Job {
        q,
        keys,
        values,
        slots: &slots,
        heads,
        n,
        dim,
        group,
        split,
        tile: tile.max(ROWS_AT_ONCE) / ROWS_AT_ONCE * ROWS_AT_ONCE,
        position,
        scale,
    };
    candle_core::utils::barrier_pool().execute_chunked(n * kv_heads * split.parts, |units| {
        // The loop compiled for the widest SIMD this CPU has (pulp's
        // runtime dispatch); every build rounds alike (see the module).
        pulp::Arch::new().dispatch(Units { job: &job, units });
    });
    drop(slots);
    Tensor::from_vec(out, (n, heads * dim), &Device::Cpu)
}

/// Keys (and then values) taken as one tile by every query head of a
/// unit before the next tile: 64 rows of 128 `f32` are 32 KiB, which stay
/// in the core's cache while the heads that share them pass over it. Each
/// head reading its kv head's whole history on its own read the same keys
/// from memory once per head of the group (6 for Qwen2.5-1.5B). A
/// multiple of [`ROWS_AT_ONCE`].
const KEYS_PER_TILE: usize = 64;

/// How the query heads of one kv head are shared among units of work:
/// one unit takes the whole group (one read of the keys for all of it)
/// unless that leaves threads idle (a decode step has one token and few
/// kv heads), then the group is cut into parts.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Split {
    /// Units per (token, kv head).
    parts: usize,
    /// Query heads per unit (the last part may have fewer).
    heads: usize,
}

impl Split {
    /// For `rows` (token, kv head) pairs of `group` query heads each, on
    /// `threads` threads.
    fn new(rows: usize, group: usize, threads: usize) -> Self {
        let group = group.max(1);
        let wanted = threads.div_ceil(rows.max(1)).clamp(1, group);
        let heads = group.div_ceil(wanted);
        Self {
            parts: group.div_ceil(heads),
            heads,
        }
    }
}

/// What every unit of one call reads, and the output rows it writes.
struct Job<'a, 'o> {
    q: &'a [f32],
    keys: Rows<'a>,
    values: Rows<'a>,
    /// Output row of token `t`, head `h`: `slots[t * heads + h]`.
    slots: &'a [Mutex<&'o mut [f32]>],
    heads: usize,
    n: usize,
    dim: usize,
    /// Query heads per kv head.
    group: usize,
    split: Split,
    /// Keys per tile ([`KEYS_PER_TILE`]; tests vary it).
    tile: usize,
    position: usize,
    scale: f32,
}

/// A range of units, run under pulp's dispatch: `with_simd` is inlined
/// into a function compiled with the CPU's widest SIMD, and with it every
/// loop below.
struct Units<'j, 'a, 'o> {
    job: &'j Job<'a, 'o>,
    units: std::ops::Range<usize>,
}

impl pulp::WithSimd for Units<'_, '_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        // The common head sizes get loops of known length (no bounds
        // checks, fully unrolled); the same sums in the same order.
        match self.job.dim {
            128 => self.run::<128>(),
            64 => self.run::<64>(),
            _ => self.run::<0>(),
        }
    }
}

impl Units<'_, '_, '_> {
    /// The units, with rows of `D` values (`0`: of the job's length).
    /// Unit `u` is token `u / (kv heads × parts)`, then kv head, then part
    /// of the kv head's query heads.
    #[inline(always)]
    fn run<const D: usize>(self) {
        let job = self.job;
        let parts = job.split.parts;
        let kv_heads = job.heads / job.group;
        let mut scores: Vec<Vec<f32>> = Vec::new();
        for unit in self.units {
            let token = unit / (kv_heads * parts);
            let kv_head = unit / parts % kv_heads;
            let first = kv_head * job.group + unit % parts * job.split.heads;
            let last = (first + job.split.heads).min((kv_head + 1) * job.group);
            let queries: Vec<&[f32]> = (first..last)
                .map(|head| &job.q[(head * job.n + token) * job.dim..][..job.dim])
                .collect();
            let mut guards: Vec<_> = (first..last)
                .map(|head| {
                    job.slots[token * job.heads + head]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                })
                .collect();
            let mut outs: Vec<&mut [f32]> = guards.iter_mut().map(|g| &mut ***g).collect();
            if scores.len() < queries.len() {
                scores.resize_with(queries.len(), || Vec::with_capacity(job.position + job.n));
            }
            heads_body::<D>(
                Heads {
                    queries: &queries,
                    keys: job.keys.head(kv_head),
                    values: job.values.head(kv_head),
                    seen: job.position + token + 1,
                    scale: job.scale,
                    tile: job.tile,
                },
                &mut scores[..queries.len()],
                &mut outs,
            );
        }
    }
}

/// The `f32` data of a CPU tensor's storage.
fn cpu_f32(storage: &Storage) -> Result<&[f32]> {
    match storage {
        Storage::Cpu(cpu) => cpu.as_slice::<f32>(),
        _ => candle_core::bail!("attention runs on the CPU"),
    }
}

/// Keys or values: per kv head, `dim`-long rows at a fixed stride.
#[derive(Clone, Copy)]
struct Rows<'a> {
    data: &'a [f32],
    start: usize,
    head_stride: usize,
    row_stride: usize,
    dim: usize,
}

impl<'a> Rows<'a> {
    fn new(data: &'a [f32], layout: &Layout, dim: usize) -> Result<Self> {
        let stride = layout.stride();
        if stride.len() != 4 || stride[3] != 1 {
            candle_core::bail!("attention: keys and values need rows of unit stride");
        }
        Ok(Self {
            data,
            start: layout.start_offset(),
            head_stride: stride[1],
            row_stride: stride[2],
            dim,
        })
    }

    /// The rows of one kv head.
    fn head(self, kv_head: usize) -> Self {
        Self {
            start: self.start + kv_head * self.head_stride,
            ..self
        }
    }

    #[inline(always)]
    fn row(&self, j: usize) -> &'a [f32] {
        &self.data[self.start + j * self.row_stride..][..self.dim]
    }
}

/// The inputs of the query rows of one token that read one kv head.
struct Heads<'a, 'q> {
    queries: &'q [&'a [f32]],
    keys: Rows<'a>,
    values: Rows<'a>,
    /// Keys each may see (the token's own included).
    seen: usize,
    scale: f32,
    /// Keys per tile ([`KEYS_PER_TILE`]).
    tile: usize,
}

/// Key or value rows taken together: one load of the query's lanes
/// serves this many keys, one load of the output's lanes this many
/// values. Each row's own sums keep their order, so the block changes
/// nothing in the result.
const ROWS_AT_ONCE: usize = 4;

/// `row` cut to `D` values, so that the loops over it have a length
/// known at compile time (`D` = 0: left as it is).
#[inline(always)]
fn fixed<const D: usize>(row: &[f32]) -> &[f32] {
    if D == 0 {
        row
    } else {
        &row[..D]
    }
}

/// Scores, softmax and weighted values of each query row, in a fixed
/// order. The keys and values are read a tile at a time by every row
/// before the next tile; each row's sums are the same, in the same order,
/// as if it were alone (whole blocks of [`ROWS_AT_ONCE`] keys first, in
/// order, then the keys after the last whole block one at a time).
#[inline(always)]
fn heads_body<const D: usize>(r: Heads<'_, '_>, scores: &mut [Vec<f32>], outs: &mut [&mut [f32]]) {
    let blocks = r.seen / ROWS_AT_ONCE * ROWS_AT_ONCE;
    for s in scores.iter_mut() {
        s.clear();
    }
    for tile in (0..blocks).step_by(r.tile) {
        let end = (tile + r.tile).min(blocks);
        for (query, scores) in r.queries.iter().zip(scores.iter_mut()) {
            let query = fixed::<D>(query);
            for j in (tile..end).step_by(ROWS_AT_ONCE) {
                let keys: [&[f32]; ROWS_AT_ONCE] =
                    std::array::from_fn(|i| fixed::<D>(r.keys.row(j + i)));
                scores.extend(dots(query, keys).map(|d| d * r.scale));
            }
        }
    }
    for j in blocks..r.seen {
        let key = fixed::<D>(r.keys.row(j));
        for (query, scores) in r.queries.iter().zip(scores.iter_mut()) {
            let [d] = dots(fixed::<D>(query), [key]);
            scores.push(d * r.scale);
        }
    }
    let mut inverses = Vec::with_capacity(scores.len());
    for scores in scores.iter_mut() {
        let top = scores.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        for score in scores.iter_mut() {
            *score = (*score - top).exp();
        }
        inverses.push(1.0 / sum(scores));
    }
    for out in outs.iter_mut() {
        out.fill(0.0);
    }
    for tile in (0..blocks).step_by(r.tile) {
        let end = (tile + r.tile).min(blocks);
        for ((out, scores), &inverse) in outs.iter_mut().zip(scores.iter()).zip(&inverses) {
            let out = if D == 0 { &mut **out } else { &mut out[..D] };
            for j in (tile..end).step_by(ROWS_AT_ONCE) {
                let weights: [f32; ROWS_AT_ONCE] = std::array::from_fn(|i| scores[j + i] * inverse);
                let values: [&[f32]; ROWS_AT_ONCE] =
                    std::array::from_fn(|i| fixed::<D>(r.values.row(j + i)));
                add_weighted(out, weights, values);
            }
        }
    }
    for j in blocks..r.seen {
        let value = fixed::<D>(r.values.row(j));
        for ((out, scores), &inverse) in outs.iter_mut().zip(scores.iter()).zip(&inverses) {
            let out = if D == 0 { &mut **out } else { &mut out[..D] };
            add_weighted(out, [scores[j] * inverse], [value]);
        }
    }
}

/// `query · key` for each of `K` keys, each lane by lane with fused
/// multiply-adds, then its lanes added in a fixed tree: the same result
/// for a key whatever `K`.
#[inline(always)]
fn dots<const K: usize>(query: &[f32], keys: [&[f32]; K]) -> [f32; K] {
    let mut lanes = [[0f32; LANES]; K];
    let mut tails = [0f32; K];
    let (q_chunks, q_tail) = lanes_of(query);
    for (c, x) in q_chunks.enumerate() {
        for k in 0..K {
            let y = lane_chunk(keys[k], c);
            for l in 0..LANES {
                lanes[k][l] = x[l].mul_add(y[l], lanes[k][l]);
            }
        }
    }
    let start = query.len() - q_tail.len();
    for (i, x) in q_tail.iter().enumerate() {
        for (tail, key) in tails.iter_mut().zip(&keys) {
            *tail = x.mul_add(key[start + i], *tail);
        }
    }
    std::array::from_fn(|k| fold(lanes[k]) + tails[k])
}

/// `out += Σ weights[k] × values[k]`, each element's terms added in the
/// order of `k` with fused multiply-adds: the same result as one value
/// at a time.
#[inline(always)]
fn add_weighted<const K: usize>(out: &mut [f32], weights: [f32; K], values: [&[f32]; K]) {
    for (i, o) in out.iter_mut().enumerate() {
        let mut acc = *o;
        for k in 0..K {
            acc = weights[k].mul_add(values[k][i], acc);
        }
        *o = acc;
    }
}

/// The sum of `values`, lane by lane, then the lanes in a fixed tree.
#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let (chunks, tail) = lanes_of(values);
    for chunk in chunks {
        for l in 0..LANES {
            lanes[l] += chunk[l];
        }
    }
    fold(lanes) + tail.iter().sum::<f32>()
}

/// `values` as whole chunks of [`LANES`], and what is left.
#[inline(always)]
fn lanes_of(values: &[f32]) -> (impl Iterator<Item = &[f32; LANES]>, &[f32]) {
    let chunks = values.chunks_exact(LANES);
    let tail = chunks.remainder();
    (chunks.map(|c| c.try_into().unwrap_or(&[0.0; LANES])), tail)
}

/// Chunk `c` of [`LANES`] values of `row`.
#[inline(always)]
fn lane_chunk(row: &[f32], c: usize) -> &[f32; LANES] {
    row[c * LANES..(c + 1) * LANES]
        .try_into()
        .unwrap_or(&[0.0; LANES])
}

/// The lanes added pairwise, halves first.
#[inline(always)]
fn fold(mut lanes: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for l in 0..width {
            lanes[l] += lanes[l + width];
        }
        width /= 2;
    }
    lanes[0]
}

#[cfg(test)]
mod tests;
