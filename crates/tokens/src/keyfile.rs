//! Key files and keys as text: 64 hexadecimal digits for 32 bytes, as the server's
//! token key (`--key-file`), its identity (`--identity-file`) and the known-servers list
//! write them.

use std::io::{self, Write};
use std::path::Path;

/// Reads a key file: 64 hexadecimal digits (32 bytes), whitespace around them allowed.
pub fn load_key_file(path: &Path) -> Result<[u8; 32], String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() || meta.len() > 1024 {
        return Err(format!("{}: not a key file", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_key(text.trim()).ok_or_else(|| {
        format!(
            "{}: a key file holds 64 hexadecimal digits (32 bytes)",
            path.display()
        )
    })
}

/// Parses 64 hexadecimal digits into a key.
pub fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `key` as a new key file at `path`, readable by its owner only, without ever
/// leaving a partial file there: written beside it, then linked into place (a link fails
/// if the name is taken, where a rename would replace it, so two writers racing end up
/// sharing the first one's key).
pub fn write_new_key_file(path: &Path, key: &[u8; 32]) -> io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let _ = std::fs::remove_file(&tmp); // one left by a crash of a process with our id
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&tmp).and_then(|mut file| {
        file.write_all(hex(key).as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    linked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_64_hex_digits() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let key = parse_key(hex).expect("valid");
        assert_eq!(key[1], 0x11);
        assert_eq!(key[31], 0xff);
        assert_eq!(parse_key(&hex[..62]), None);
        assert_eq!(parse_key(&hex.replace('0', "g")), None);
        assert_eq!(parse_key("é".repeat(32).as_str()), None);
    }
}
