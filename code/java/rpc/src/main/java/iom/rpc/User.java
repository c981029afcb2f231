package iom.rpc;

/** What the service answers: the user of an id (source write-up 004's call). */
public record User(int id, String name) {}
