import Glibc

/// Writes a line to file descriptor 2 (glibc's `stderr` is a global Swift 6 will not touch unchecked).
public func printToStandardError(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// `value` with `digits` decimals, without Foundation.
public func fixed(_ value: Double, _ digits: Int) -> String {
    guard value.isFinite else { return "null" }
    var scale = 1
    for _ in 0..<digits { scale *= 10 }
    let scaled = Int((value * Double(scale)).rounded())
    let sign = scaled < 0 ? "-" : ""
    let whole = "\(abs(scaled) / scale)"
    guard digits > 0 else { return sign + whole }
    let fraction = "\(abs(scaled) % scale)"
    return sign + whole + "." + String(repeating: "0", count: digits - fraction.count) + fraction
}

/// `text` right-aligned in `width` columns.
public func column(_ text: String, _ width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
}
