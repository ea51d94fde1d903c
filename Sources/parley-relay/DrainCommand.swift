import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyAuth
import ParleyNet
import ParleyRelay
import Synchronization

/// `parley-relay drain`: asks the running relay that the same settings describe (its HTTP address and API key, from
/// the same --config, PARLEY_* variables and flags) to drain (`POST /v1/cluster/drain`): it leaves the cluster's
/// placement and its members move to other nodes. Prints how many moved and how many stay; exits 0 when it drained,
/// 5 when the relay cannot be reached, 3 when it refused (alone, or a bad key).
func drainCommand(config: RelayConfig) -> Never {
    let scheme = config.httpTLSCertificate == nil ? "http" : "https"
    let base = "\(scheme)://\(config.http.description)"
    guard let url = URL(string: base + "/v1/cluster/drain"), let (key, secret) = config.apiKeys.sorted(by: { $0.key < $1.key }).first else {
        fail("cannot make the drain request for \(base)")
    }
    let now = Int64(Date().timeIntervalSince1970)
    let token = TokenSigner(apiKey: key, apiSecret: secret).mint(
        TokenClaims(identity: "parley-relay drain", room: nil, expiresAt: now + 60, issuedAt: now,
                    grants: Grants(join: false, publish: false, subscribe: false, admin: true, create: false)))
    var request = URLRequest(url: url, timeoutInterval: 10)
    request.httpMethod = "POST"
    request.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
    let result = Mutex<(Data?, Int, String?)>((nil, 0, nil))
    let done = DispatchSemaphore(value: 0)
    URLSession.shared.dataTask(with: request) { data, response, error in
        result.withLock { $0 = (data, (response as? HTTPURLResponse)?.statusCode ?? 0, error?.localizedDescription) }
        done.signal()
    }.resume()
    done.wait()
    let (data, status, error) = result.withLock { $0 }
    if let error { fail("cannot reach the relay at \(base): \(error)", code: 5) }
    let object = data.flatMap { try? JSONSerialization.jsonObject(with: $0) } as? [String: Any] ?? [:]
    guard status == 200 else {
        let e = object["error"] as? [String: Any]
        fail("the relay refused: \(status) \(e?["code"] ?? "error"): \(e?["message"] ?? "")", code: 3)
    }
    writeLine("draining: \(object["moved"] ?? 0) members moving to other nodes, \(object["staying"] ?? 0) staying")
    exit(0)
}
