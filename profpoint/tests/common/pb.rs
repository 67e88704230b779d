//! A minimal protobuf reader for the pprof tests: enough wire format to check what
//! `Report::to_pprof` wrote, field by field.

/// The protobuf inside a pprof profile as `Report::to_pprof` and `pprof:PATH` write it: gzipped
/// once (the format's consumers expect gzip; `tests/consumers.rs` has them read it).
pub fn gunzip(b: &[u8]) -> Vec<u8> {
    use std::io::Read;
    assert_eq!(
        b.get(..2),
        Some(&[0x1f, 0x8b][..]),
        "a pprof profile is gzipped"
    );
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// A minimal protobuf reader for the test: (field number, wire type, varint or bytes).
pub fn pb_fields(mut b: &[u8]) -> Vec<(u64, u64, u64, Vec<u8>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        match key & 7 {
            0 => out.push((key >> 3, 0, varint(&mut b), Vec::new())),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((key >> 3, 2, 0, b[..n].to_vec()));
                b = &b[n..];
            }
            w => panic!("unexpected wire type {w}"),
        }
    }
    out
}

/// The values of a packed repeated varint field.
pub fn packed_varints(mut b: &[u8]) -> Vec<u64> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let (mut x, mut shift) = (0u64, 0);
        loop {
            let byte = b[0];
            b = &b[1..];
            x |= u64::from(byte & 0x7f) << shift;
            shift += 7;
            if byte < 0x80 {
                break;
            }
        }
        v.push(x);
    }
    v
}

/// The values of repeated varint field `field` among `fields` (from [`pb_fields`]), packed or
/// not (protobuf readers must accept both).
pub fn repeated_varints(fields: &[(u64, u64, u64, Vec<u8>)], field: u64) -> Vec<u64> {
    fields
        .iter()
        .filter(|x| x.0 == field)
        .flat_map(|x| {
            if x.1 == 2 {
                packed_varints(&x.3)
            } else {
                vec![x.2]
            }
        })
        .collect()
}
