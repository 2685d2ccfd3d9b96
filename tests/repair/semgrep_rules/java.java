import java.io.FileInputStream;
import java.io.FileReader;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;

class Fixtures {
    private final String name;
    private final Object owner;
    private final int size;

    // constructor-missing-null-check
    Fixtures(String name, Object owner, int size) {
        // ruleid: java.constructor-missing-null-check
        this.name = name;
        this.owner = Objects.requireNonNull(owner, "owner");
        // ok: java.constructor-missing-null-check
        this.size = size;
    }

    Fixtures(String name) {
        Objects.requireNonNull(name, "name");
        // ok: java.constructor-missing-null-check
        this.name = name;
        this.owner = null;
        this.size = 0;
    }

    Fixtures(Object owner) {
        if (owner == null) throw new IllegalArgumentException("owner");
        this.name = "";
        // ok: java.constructor-missing-null-check
        this.owner = owner;
        this.size = 0;
    }

    void setName(String name) {
        // ok: java.constructor-missing-null-check
        this.name2 = name;
    }

    byte[] hashes(byte[] data) throws Exception {
        // ruleid: java.weak-md5
        MessageDigest weak = MessageDigest.getInstance("MD5");
        // ruleid: java.weak-md5
        MessageDigest lower = java.security.MessageDigest.getInstance("md5");
        // ok: java.weak-md5
        MessageDigest strong = MessageDigest.getInstance("SHA-256");
        String alg = "SHA-512";
        // ok: java.weak-md5
        MessageDigest chosen = MessageDigest.getInstance(alg);
        return strong.digest(data);
    }

    int randoms() {
        // ruleid: java.insecure-random
        Random r = new Random();
        // ruleid: java.insecure-random
        Random seeded = new java.util.Random(42L);
        // ok: java.insecure-random
        SecureRandom s = new SecureRandom();
        return r.nextInt() + s.nextInt();
    }

    String optionals(Optional<String> maybe, Optional<String> other, Optional<String> third) {
        // ruleid: java.optional-get-without-check
        String a = maybe.get();
        if (other.isPresent()) {
            // ok: java.optional-get-without-check
            return other.get();
        }
        // ok: java.optional-get-without-check
        String c = third.isPresent() ? third.get() : "";
        java.util.Map<String, String> map = new java.util.HashMap<>();
        // ok: java.optional-get-without-check
        String d = map.get("k");
        // ok: java.optional-get-without-check
        String e = maybe.orElse("none");
        return a + c + d + e;
    }

    String guarded(Optional<String> value) {
        if (!value.isPresent()) {
            return "";
        }
        // ok: java.optional-get-without-check
        return value.get();
    }

    String guardedEmpty(Optional<String> value) {
        if (value.isEmpty()) {
            return "";
        }
        // ok: java.optional-get-without-check
        return value.get();
    }

    boolean equalities(String input) {
        // ruleid: java.equals-literal-order
        boolean a = input.equals("yes");
        // ok: java.equals-literal-order
        boolean b = "yes".equals(input);
        // ok: java.equals-literal-order
        boolean c = input.equals(name);
        // ok: java.equals-literal-order
        boolean d = "a".equals("b");
        return a || b || c || d;
    }

    int streams(String path) throws IOException {
        // ruleid: java.unclosed-file-stream
        FileInputStream in = new FileInputStream(path);
        int first = in.read();
        // ok: java.unclosed-file-stream
        try (FileInputStream safe = new FileInputStream(path)) {
            first += safe.read();
        }
        // ok: java.unclosed-file-stream
        try (FileReader reader = new FileReader(path)) {
            first += reader.read();
        } catch (IOException e) {
            first = -1;
        }
        // ok: java.unclosed-file-stream
        FileInputStream managed = new FileInputStream(path);
        try {
            first += managed.read();
        } finally {
            managed.close();
        }
        return first;
    }

    FileInputStream open(String path) throws IOException {
        // ok: java.unclosed-file-stream
        return new FileInputStream(path);
    }
}
