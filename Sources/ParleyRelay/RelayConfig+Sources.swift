import Foundation

// Where settings come from besides flags: a JSON file (`--config`) and `PARLEY_*` environment variables; each value
// goes through `RelayConfig.set` as a flag's would.
extension RelayConfig {
    /// Reads a JSON object of settings (numbers, strings; `api_keys` as an object of key → secret; `turn_urls` as a
    /// string or an array of strings).
    public mutating func load(file path: String) throws(ConfigError) {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigError("cannot read config file \(path)") }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw ConfigError("config file \(path) is not valid JSON" + (detail.map { ": \($0)" } ?? ""))
        }
        guard let dict = object as? [String: Any] else { throw ConfigError("config file \(path) must hold a JSON object") }
        for key in dict.keys.sorted() {
            let value = dict[key]!
            if key == "api_keys" {
                apiKeys = try Self.apiKeys(value, from: "api_keys")
                continue
            }
            // Each as one sip_trunk (a password may hold spaces, which the string form splits at).
            if key == "sip_trunks", let list = value as? [String] {
                sipTrunks = []
                for trunk in list { try set("sip_trunk", trunk) }
                continue
            }
            if key == "webhooks", let list = value as? [Any] {  // the array as JSON, parsed by `setWebhook`
                let data = (try? JSONSerialization.data(withJSONObject: list)) ?? Data()
                try set(key, String(decoding: data, as: UTF8.self))
                continue
            }
            let text: String
            if let s = value as? String {
                text = s
            } else if let n = value as? NSNumber {
                text = n.stringValue
            } else if key == "announce" || key == "turn_urls", let list = value as? [String] {
                text = list.joined(separator: ",")  // a list as JSON writes one
            } else {
                throw ConfigError("\(key) in \(path) must be a string or a number")
            }
            try set(key, text)
        }
    }

    /// `api_keys` as a JSON object of key → secret (secrets at least 16 bytes).
    static func apiKeys(_ value: Any, from source: String) throws(ConfigError) -> [String: String] {
        guard let keys = value as? [String: String], !keys.isEmpty, keys.values.allSatisfy({ $0.utf8.count >= 16 }) else {
            throw ConfigError("\(source) must be an object of key → secret (secrets at least 16 bytes)")
        }
        return keys
    }

    /// `api_keys_file`: a JSON object of key → secret in a file of its own, which others than its owner and group may
    /// not read (the package makes /etc/parley/api-keys.json, root:parley-relay 0640). Reread at each reload: keys
    /// rotate with `systemctl reload`. Errors name the file, never a secret.
    static func apiKeys(file path: String) throws(ConfigError) -> [String: String] {
        guard !path.utf8.contains(0), let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("api_keys_file: cannot read \(path)")
        }
        if let mode = attributes[.posixPermissions] as? Int, mode & 0o007 != 0 {
            throw ConfigError("api_keys_file \(path) may be read by anyone (mode \(String(mode, radix: 8))): "
                              + "chmod o-rwx \(path)")
        }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            throw ConfigError("api_keys_file \(path) is not valid JSON")
        }
        return try apiKeys(object, from: "api_keys_file \(path)")
    }

    /// Applies `PARLEY_<KEY>` variables.
    public mutating func load(environment: [String: String]) throws(ConfigError) {
        for key in Self.keys {
            if let value = environment["PARLEY_" + key.uppercased()] { try set(key, value) }
        }
    }
}
