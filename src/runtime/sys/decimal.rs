//! Decimal digits of an integer into a caller's buffer: no allocation and no
//! lock, so a signal handler may use it as well as the trace's JSON writer.

/// Room for the digits of any `u64`.
pub(crate) const MAX_DIGITS: usize = 20;

/// Writes `v`'s decimal digits at the end of `buf` and returns them.
pub(crate) fn digits(mut v: u64, buf: &mut [u8; MAX_DIGITS]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    #[test]
    fn digits_of_the_edges() {
        let mut buf = [0; super::MAX_DIGITS];
        assert_eq!(super::digits(0, &mut buf), b"0");
        assert_eq!(super::digits(7, &mut buf), b"7");
        assert_eq!(super::digits(1_000_000, &mut buf), b"1000000");
        assert_eq!(super::digits(u64::MAX, &mut buf), u64::MAX.to_string().as_bytes());
    }
}
